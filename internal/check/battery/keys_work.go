package battery

import (
	"strings"

	"github.com/idemtest/idemtest/internal/matrix"
	"github.com/idemtest/idemtest/internal/toolset"
)

// keyProof is what a retry check showed of a tool's keys: whether a same-key retry was recognised
// (answered with the stored result, or refused as a duplicate), and the cell that showed it.
type keyProof struct {
	work bool
	// ignored is set when the retry executed again (the answers, the state, the effects or
	// the sinks counted a second execution): the keys are not honoured.
	ignored bool
	// why names the cell: "replay ✓ the retry got the stored answer".
	why string
}

// proofOf is what a replay or lost-response cell shows of the keys: they work when the retry was
// not executed again and the check could tell (✓), or when the retry was refused by its status
// (the key was recognised, even if the stored answer never came).
func proofOf(c *Cell) *keyProof {
	return &keyProof{
		work:    !c.twice && (c.Status == matrix.Pass || ((c.Status == matrix.Warn || c.Status == matrix.Fail) && c.ByStatusOnly())),
		ignored: c.twice,
		why:     c.Check + " " + c.Status.Symbol() + " " + firstClause(c.Reason),
	}
}

// keysWork is what the tool's keys were shown to do with a retry: by the replay or lost-response
// cell already decided for it, else by a replay run now. key-scope and distinct-keys judge what
// a key does on another tool or next to another key, which says nothing on a server where a key
// does nothing to begin with (an answer equal to the first tool's, or two executions for two
// keys, are then no evidence): they are judged only where keys work.
func (b *Battery) keysWork(t toolset.ToolInfo, args map[string]any) *keyProof {
	if b.keys == nil {
		b.keys = proofOf(b.withEffects(b.replay(t, args)))
	}
	return b.keys
}

// cell is the cell of key check id on a tool whose keys were not shown to work: – when a same-key
// retry executed again (the keys are not honoured, so there is nothing to judge and nothing that
// could go red), ? when the retry check could not tell.
func (p *keyProof) cell(id string) *Cell {
	if p.ignored {
		return &Cell{Check: id, Status: matrix.Skip, Reason: "not judged: keys are not honoured, a same-key retry executed again (" + p.why + "); judged only where keys work"}
	}
	return &Cell{Check: id, Status: matrix.Inconclusive, Reason: "judged only where keys are shown to work, and a same-key retry was not shown to be deduplicated (" + p.why + ")"}
}

// firstClause is a reason up to its first colon or semicolon: what a cell showed, without why.
func firstClause(reason string) string {
	if i := strings.IndexAny(reason, ":;"); i > 0 {
		return reason[:i]
	}
	return reason
}
