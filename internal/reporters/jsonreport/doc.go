// Package jsonreport writes the JSON reports: a run's (format version 1, every trial with every
// call, read back by Read to render a recorded run again), check's battery, a sweep and the
// proxy's verdict.
//
//	err := jsonreport.Write(f, rep, version)
//	rep, err := jsonreport.Read(f)
package jsonreport
