package battery

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/idemtest/idemtest/internal/check/rig"
	"github.com/idemtest/idemtest/internal/explain"
	"github.com/idemtest/idemtest/internal/matrix"
	"github.com/idemtest/idemtest/internal/result"
	"github.com/idemtest/idemtest/internal/toolset"
)

// Battery runs the checks on the tools of one endpoint, on one started environment: its rig runs
// their scenarios and measures the tool being checked; the battery decides the cells.
type Battery struct {
	*rig.Rig
	prof Profile
	// contentDedup is set when a retry of the current tool answered like a second execution
	// while the state showed one: the server deduplicates by content.
	contentDedup bool
	// giveUp, when set, is how long the in-flight checks wait in the trial being run (inFlight).
	giveUp time.Duration
	// fresh, during an in-flight check, is the tool's shortest execution measured before it.
	fresh time.Duration
	// keys is what replay or lost-response showed of the current tool's keys (keyProof).
	keys *keyProof
	// blind is why the current tool's unmarked equal answers and its state prove no replay
	// (blindness), once measured; "" when they do.
	blind *string
}

// New is a battery on target that expects prof's status codes of refused calls.
func New(ctx context.Context, target rig.Target, opts rig.Options, prof Profile) *Battery {
	return &Battery{Rig: rig.New(ctx, target, opts), prof: prof}
}

// Prepare readies the battery for tool t (rig.Prepare): its arguments, or why it cannot be
// checked.
func (b *Battery) Prepare(t toolset.ToolInfo) (args map[string]any, why string) {
	b.contentDedup, b.keys, b.blind = false, nil, nil
	return b.Rig.Prepare(t)
}

// Cell runs check id on tool t, prepared with args, and decides its cell from every evidence.
func (b *Battery) Cell(id string, t toolset.ToolInfo, args map[string]any) *Cell {
	start := time.Now()
	var c *Cell
	if id == TimeoutRetry || id == MismatchInFlight {
		c = b.inFlight(id, t, args)
	} else {
		c = b.withEffects(b.run(id, t, args))
	}
	c.Duration = time.Since(start)
	c.EvidenceText = c.Evidence.String()
	if c.Status == matrix.Fail {
		showCalls(c)
	}
	if c.Status != matrix.Pass && c.plan != nil {
		c.Details = append(c.Details, c.plan.OutputLines()...)
	}
	if (id == Replay || id == LostResponse) && (b.keys == nil || !b.keys.work) {
		b.keys = proofOf(c)
	}
	return c
}

// showCalls gives a ✗ cell the session and keys of the trial that decided it, and its calls
// when its details do not list them yet (a cell the effects, the sinks or the state decided
// after the answers passed it): whatever decided it, the user can find its rows.
func showCalls(c *Cell) {
	if c.plan == nil || c.plan.Last == nil {
		return
	}
	tr := explain.Trial(c.plan.Last)
	if tr == nil {
		return
	}
	c.Session = tr.Session
	c.Keys = nil
	for _, call := range tr.Calls {
		if call.Key != "" && !slices.Contains(c.Keys, call.Key) {
			c.Keys = append(c.Keys, call.Key)
		}
	}
	for _, l := range c.Details {
		if strings.HasPrefix(l, "calls (session ") {
			return
		}
	}
	c.Details = append(c.Details, details(&result.ScenarioResult{}, tr)...)
}
