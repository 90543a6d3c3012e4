// Package reportfile owns the files a command writes its reports and traces to: opened (created
// or truncated) before anything is sent, so that a path that cannot take a report is bad usage
// rather than something found out after the run; refused in /proc and /sys; and written
// redacted, each report whole, so that no secret of the scenarios reaches a file.
//
//	files, err := reportfile.OpenSet(junitPath, jsonPath, "")
//	defer files.Close()
//	// ... run ...
//	err = files.Write(reportfile.Writers{JUnit: writeJUnit, JSON: writeJSON}, red, os.Stdout)
package reportfile
