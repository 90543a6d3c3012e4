package matrix

import "strings"

// EvidenceKind names what kind of observation decided a cell; the kinds are stable (JSON).
type EvidenceKind string

// The kinds of evidence, strongest first (DESIGN §9): what counts executions before what only
// suggests them.
const (
	// EvidenceEffects: the declared effects counted the executions.
	EvidenceEffects EvidenceKind = "effects"
	// EvidenceSinks: the named sinks heard the executions' requests.
	EvidenceSinks EvidenceKind = "sinks"
	// EvidenceState: the named read-only tools showed the state before and after.
	EvidenceState EvidenceKind = "state"
	// EvidenceAnswers: the answers, as the exactly-once verdict judges them.
	EvidenceAnswers EvidenceKind = "answers"
	// EvidenceStatus: the status code of a call that had to be refused.
	EvidenceStatus EvidenceKind = "status"
)

// Evidence is one thing that decided a cell: its kind and, for sinks and state, what was read.
type Evidence struct {
	Kind  EvidenceKind `json:"kind"`
	Names []string     `json:"names,omitempty"`
	// Overruled marks answers that differed as a second execution's would while the state
	// showed one (a server that deduplicates by content): the exactly-once verdict did not
	// decide, so they are shown as plain "answers".
	Overruled bool `json:"overruled,omitempty"`
}

// String is the evidence as a reader sees it: "sinks (payment_processor)", "status code",
// "answers (exactly-once verdict)".
func (e Evidence) String() string {
	var s string
	switch e.Kind {
	case EvidenceAnswers:
		s = "answers (exactly-once verdict)"
		if e.Overruled {
			s = "answers"
		}
	case EvidenceStatus:
		s = "status code"
	default:
		s = string(e.Kind)
	}
	if len(e.Names) > 0 {
		s += " (" + strings.Join(e.Names, ", ") + ")"
	}
	return s
}

// Evidences is what decided a cell, strongest first.
type Evidences []Evidence

// String joins the evidences as a reader sees them: "state (list_refunds), status code".
func (es Evidences) String() string {
	parts := make([]string, len(es))
	for i, e := range es {
		parts[i] = e.String()
	}
	return strings.Join(parts, ", ")
}

// Only reports whether es is the one evidence of kind k, as the exactly-once verdict or a
// status code alone decides a cell.
func (es Evidences) Only(k EvidenceKind) bool {
	return len(es) == 1 && es[0].Kind == k && !es[0].Overruled
}

// Leads reports whether the strongest evidence of es is of kind k.
func (es Evidences) Leads(k EvidenceKind) bool {
	return len(es) > 0 && es[0].Kind == k && !es[0].Overruled
}

// Has reports whether es names evidence of kind k that was not overruled.
func (es Evidences) Has(k EvidenceKind) bool {
	for _, e := range es {
		if e.Kind == k && !e.Overruled {
			return true
		}
	}
	return false
}

// Lead puts e before es: stronger evidence is named first.
func (es Evidences) Lead(e ...Evidence) Evidences {
	return append(append(Evidences(nil), e...), es...)
}

// ParseEvidences reads back what Evidences.String wrote: a report written before its cells
// carried evidence_items has only that text.
func ParseEvidences(s string) Evidences {
	var out Evidences
	depth, start := 0, 0
	for i := 0; i <= len(s); i++ {
		if i < len(s) {
			switch s[i] {
			case '(':
				depth++
			case ')':
				depth--
			}
			if depth != 0 || !strings.HasPrefix(s[i:], ", ") {
				continue
			}
		}
		if part := s[start:i]; part != "" {
			out = append(out, parseEvidence(part))
		}
		start = i + 2
	}
	return out
}

// parseEvidence reads back one Evidence.String.
func parseEvidence(s string) Evidence {
	switch s {
	case "answers (exactly-once verdict)":
		return Evidence{Kind: EvidenceAnswers}
	case "answers":
		return Evidence{Kind: EvidenceAnswers, Overruled: true}
	case "status code":
		return Evidence{Kind: EvidenceStatus}
	}
	kind, names, ok := strings.Cut(s, " (")
	if !ok || !strings.HasSuffix(names, ")") {
		return Evidence{Kind: EvidenceKind(s)}
	}
	return Evidence{Kind: EvidenceKind(kind), Names: strings.Split(strings.TrimSuffix(names, ")"), ", ")}
}
