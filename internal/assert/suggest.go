package assert

import "strings"

// Closest returns the candidate nearest to s when it is near enough to be a likely typo.
func Closest(s string, candidates []string) string {
	best, bestD := "", len(s)+100
	for _, c := range candidates {
		if d := Distance(strings.ToLower(s), strings.ToLower(c)); d < bestD {
			best, bestD = c, d
		}
	}
	if best != "" && bestD < len(s) && (bestD <= 2 || bestD <= len(best)/3) {
		return best
	}
	return ""
}

// Distance is the Levenshtein edit distance.
func Distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
