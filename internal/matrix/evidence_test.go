package matrix

import (
	"reflect"
	"testing"
)

// TestEvidenceString holds the text every report has always shown for a cell's evidence: the
// JSON report's "evidence" string and the terminal's "[evidence: …]" are built from it.
func TestEvidenceString(t *testing.T) {
	sinks := Evidence{Kind: EvidenceSinks, Names: []string{"payment_processor"}}
	state := Evidence{Kind: EvidenceState, Names: []string{"list_refunds", "get_balance"}}
	answers, status := Evidence{Kind: EvidenceAnswers}, Evidence{Kind: EvidenceStatus}
	effects := Evidence{Kind: EvidenceEffects}
	tests := []struct {
		name string
		es   Evidences
		want string
	}{
		{"none", nil, ""},
		{"answers", Evidences{answers}, "answers (exactly-once verdict)"},
		{"status", Evidences{status}, "status code"},
		{"effects", Evidences{effects}, "effects"},
		{"sinks", Evidences{sinks}, "sinks (payment_processor)"},
		{"state of two tools", Evidences{state}, "state (list_refunds, get_balance)"},
		{"overruled answers", Evidences{state, {Kind: EvidenceAnswers, Overruled: true}}, "state (list_refunds, get_balance), answers"},
		{"strongest first", Evidences{effects, sinks, answers}, "effects, sinks (payment_processor), answers (exactly-once verdict)"},
		{"state before status", Evidences{{Kind: EvidenceState, Names: []string{"list_refunds"}}, status}, "state (list_refunds), status code"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.es.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
			// A report written before evidence_items is read back to the same list.
			if back := ParseEvidences(tt.want); !reflect.DeepEqual(back, tt.es) {
				t.Errorf("ParseEvidences(%q) = %#v, want %#v", tt.want, back, tt.es)
			}
		})
	}
}

// TestEvidencesLead: stronger evidence goes first without touching the list it leads, and Only
// and Leads see the kind that decided.
func TestEvidencesLead(t *testing.T) {
	base := make(Evidences, 1, 4)
	base[0] = Evidence{Kind: EvidenceAnswers}
	led := base.Lead(Evidence{Kind: EvidenceSinks, Names: []string{"pp"}})
	if got := led.String(); got != "sinks (pp), answers (exactly-once verdict)" {
		t.Errorf("Lead = %q", got)
	}
	if !base.Only(EvidenceAnswers) || base[0].Kind != EvidenceAnswers || len(base) != 1 {
		t.Errorf("Lead changed the list it leads: %v", base)
	}
	if led.Only(EvidenceAnswers) || !led.Leads(EvidenceSinks) || led.Leads(EvidenceAnswers) {
		t.Errorf("Only/Leads on %v", led)
	}
	overruled := Evidences{{Kind: EvidenceAnswers, Overruled: true}}
	if overruled.Only(EvidenceAnswers) || overruled.Leads(EvidenceAnswers) {
		t.Error("overruled answers count as the exactly-once verdict's")
	}
}
