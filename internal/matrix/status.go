package matrix

// Status is a cell's verdict, shown by its Symbol.
type Status string

// The statuses of a cell.
const (
	// Pass: ✓, the tool behaved as the check requires.
	Pass Status = "pass"
	// Fail: ✗, the check caught the tool executing, answering or refusing as it must not.
	Fail Status = "fail"
	// Warn: ⚠, a protocol deviation: safe, but not the profile's status code.
	Warn Status = "warn"
	// Skip: –, the check does not apply (or was left out).
	Skip Status = "skip"
	// Inconclusive: ?, the check ran but nothing it observed could decide.
	Inconclusive Status = "inconclusive"
)

// Statuses lists the statuses from best to worst as a reader scans a matrix.
var Statuses = []Status{Pass, Warn, Skip, Inconclusive, Fail}

// Symbol is the matrix glyph of a status.
func (s Status) Symbol() string {
	switch s {
	case Pass:
		return "✓"
	case Fail:
		return "✗"
	case Warn:
		return "⚠"
	case Skip:
		return "–"
	case Inconclusive:
		return "?"
	}
	return ""
}
