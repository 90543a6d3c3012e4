package baseline

import "encoding/json"

// AuditSubject names what an audit judged: a tool's calls, or, for the rates over every call
// (tool ""), the audit as a whole.
func AuditSubject(tool string) string {
	if tool == "" {
		return "audit"
	}
	return "tool " + tool
}

type auditReport struct {
	Tools []struct {
		Tool string `json:"tool"`
	} `json:"tools"`
	Findings []struct {
		Kind      string `json:"kind"`
		Violation bool   `json:"violation"`
		Tool      string `json:"tool"`
	} `json:"findings"`
}

// parseAudit reads idemtest audit's report: each tool, and the audit as a whole, is a subject;
// a failure is a kind of violation on one of them (a double execution of issue_refund, the
// hit rate over its threshold), whatever key, trace or time it happened at, so that a known
// bug stays known from one day's export to the next.
func parseAudit(b []byte) (*Report, error) {
	var in auditReport
	if err := json.Unmarshal(b, &in); err != nil {
		return nil, err
	}
	rep := &Report{Subjects: []string{AuditSubject("")}}
	for _, t := range in.Tools {
		rep.Subjects = append(rep.Subjects, AuditSubject(t.Tool))
	}
	seen := map[Failure]bool{}
	for _, f := range in.Findings {
		fl := Failure{Subject: AuditSubject(f.Tool), What: f.Kind}
		if f.Violation && !seen[fl] {
			seen[fl] = true
			rep.Failures = append(rep.Failures, fl)
		}
	}
	return rep, nil
}
