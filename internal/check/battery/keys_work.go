package battery

import (
	"github.com/idemtest/idemtest/internal/matrix"
	"github.com/idemtest/idemtest/internal/toolset"
)

// keyProof is what a retry check showed of a tool's keys: whether a same-key retry was recognised
// (answered with the stored result, or refused as a duplicate), and the cell that showed it.
type keyProof struct {
	work bool
	// why names the cell: "replay ✓ the retry got the stored answer".
	why string
}

// proofOf is what a replay or lost-response cell shows of the keys: they work when the retry was
// not executed again and the check could tell (✓), or when the retry was refused by its status
// (the key was recognised, even if the stored answer never came).
func proofOf(c *Cell) *keyProof {
	return &keyProof{
		work: c.Status == matrix.Pass || ((c.Status == matrix.Warn || c.Status == matrix.Fail) && c.ByStatusOnly()),
		why:  c.Check + " " + c.Status.Symbol() + " " + c.Reason,
	}
}

// keysWork reports whether the tool's keys were shown to deduplicate a retry: by the replay or
// lost-response cell already decided for it, else by a replay run now. key-scope and
// distinct-keys judge what a key does on another tool or next to another key, which says
// nothing on a server where a key does nothing to begin with (an answer equal to the first
// tool's, or two executions for two keys, are then no evidence).
func (b *Battery) keysWork(t toolset.ToolInfo, args map[string]any) (bool, string) {
	if b.keys == nil {
		b.keys = proofOf(b.withEffects(b.replay(t, args)))
	}
	return b.keys.work, b.keys.why
}

// keysUnproven is the cell of a key check on a tool whose keys were not shown to work.
func keysUnproven(id, why string) *Cell {
	return &Cell{Check: id, Status: matrix.Inconclusive, Reason: "judged only where keys are shown to work, and a same-key retry was not shown to be deduplicated (" + why + ")"}
}
