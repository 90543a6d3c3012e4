package terminal

import (
	"bytes"
	"strings"
	"testing"

	"github.com/idemtest/idemtest/internal/reporters/reporterstest"
)

func TestTerminalGolden(t *testing.T) {
	var buf bytes.Buffer
	Write(&buf, reporterstest.SampleReport(), Options{})
	reporterstest.Golden(t, "report.txt", buf.Bytes())
	if strings.Contains(buf.String(), "\x1b[") {
		t.Error("colour codes without colour")
	}
	buf.Reset()
	Write(&buf, reporterstest.SampleReport(), Options{Color: true})
	if !strings.Contains(buf.String(), "\x1b[") {
		t.Error("no colour codes with colour on")
	}
}

// TestRecordedGolden renders every recorded run.
func TestRecordedGolden(t *testing.T) {
	for _, rc := range reporterstest.Recordings {
		base := strings.TrimSuffix(rc.Name, ".json")
		t.Run(base, func(t *testing.T) {
			var txt bytes.Buffer
			Write(&txt, reporterstest.Recorded(t, rc.Name), Options{})
			reporterstest.Golden(t, base+".txt", txt.Bytes())
		})
	}
}

// TestInterrupted: a scenario the interrupt stopped is neither passed nor failed (the recorded
// run.interrupted.json: one scenario finished, one cut short in its second trial with its call
// in flight, one never started).
func TestInterrupted(t *testing.T) {
	var txt bytes.Buffer
	Write(&txt, reporterstest.Recorded(t, "run.interrupted.json"), Options{})
	if !strings.Contains(txt.String(), "⊘ cut short in its second trial  interrupted in trial 2 of 3 (1 passed before)") {
		t.Errorf("terminal:\n%s", txt.String())
	}
}
