// Package junit writes JUnit XML reports, valid against the schema of Jenkins' xUnit plugin
// (testdata/junit-10.xsd): a run (a testsuite per scenario file, a testcase per scenario),
// check's battery (a testsuite per tool), a sweep and the proxy's verdict. One set of types
// and one encoder serve them all; each report is generated in memory, then encoded.
//
//	err := junit.Write(f, rep)
package junit
