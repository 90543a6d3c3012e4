// Package plural writes counts in words with the right number, so that no report says
// "1 calls" or "1 trials": the one home of that rule for every report and message.
//
//	plural.Count(1, "call")          // "1 call"
//	plural.Count(3, "copy")          // "3 copies"
//	fmt.Sprintf("%d/%d %s", ok, n, plural.Noun(n, "trial")) // "1/1 trial", "2/5 trials"
package plural
