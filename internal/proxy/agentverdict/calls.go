package agentverdict

import (
	"hash/fnv"

	"github.com/idemtest/idemtest/internal/outcome"
)

// Calls holds the digests of a session's calls (Call) packed: a fixed row per call and its key,
// quoted arguments and argument hashes in shared byte blocks, the tool names, key carriers and
// faults each once. A call costs about 60 bytes plus its key and arguments as quoted (at most
// 120 bytes), so that a proxy session of any length keeps little per call. The zero value is
// empty; Calls is not safe for concurrent use.
type Calls struct {
	rows [][]row // in blocks of rowBlock
	data [][]byte
	// names holds the tool names, key carriers and faults, each once (index 0 is "").
	names   []string
	nameIx  map[string]uint32
	errs    map[int]string // Error of the calls that keep one, by position
	n       int
	ordered bool // rows were added in ascending seq
	// Hide, when set, hides secrets in what At returns (tool, key, arguments, error).
	Hide func(string) string
}

type row struct {
	seq            int
	sig            [16]byte
	block          uint32 // data block of key, args and fields, one after the other
	off            uint32
	keyLen         uint32
	fldLen         uint32
	argLen         uint8
	flags          uint8
	tool           uint32
	carrier, fault uint32
}

const (
	flagMutating = 1 << iota
	flagAnswered
	flagInfo // outcome info
	flagFail // outcome fail
)

const (
	rowBlock  = 4096
	dataBlock = 64 << 10
)

func (cs *Calls) name(s string) uint32 {
	if s == "" {
		return 0
	}
	if cs.nameIx == nil {
		cs.nameIx, cs.names = map[string]uint32{}, []string{""}
	}
	if i, ok := cs.nameIx[s]; ok {
		return i
	}
	cs.names = append(cs.names, s)
	cs.nameIx[s] = uint32(len(cs.names) - 1)
	return uint32(len(cs.names) - 1)
}

// Add appends a call's digest.
func (cs *Calls) Add(c Call) {
	if cs.n == 0 {
		cs.ordered = true
	} else if cs.ordered && c.Seq < cs.row(cs.n-1).seq {
		cs.ordered = false
	}
	c.Args = args0(c.Args) // as Digest quotes them: at most 120 bytes
	r := row{seq: c.Seq, sig: c.Sig, tool: cs.name(c.Tool), carrier: cs.name(c.KeyCarrier), fault: cs.name(c.Fault),
		keyLen: uint32(len(c.Key)), fldLen: uint32(len(c.fields)), argLen: uint8(len(c.Args))}
	if c.Mutating {
		r.flags |= flagMutating
	}
	if c.Answered {
		r.flags |= flagAnswered
	}
	switch c.Outcome {
	case outcome.Info:
		r.flags |= flagInfo
	case outcome.Fail:
		r.flags |= flagFail
	}
	size := len(c.Key) + len(c.Args) + len(c.fields)
	last := len(cs.data) - 1
	if last < 0 || len(cs.data[last])+size > cap(cs.data[last]) {
		cs.data = append(cs.data, make([]byte, 0, max(dataBlock, size)))
		last++
	}
	r.block, r.off = uint32(last), uint32(len(cs.data[last]))
	b := append(cs.data[last], c.Key...)
	b = append(b, c.Args...)
	cs.data[last] = append(b, c.fields...)
	if c.Error != "" {
		if cs.errs == nil {
			cs.errs = map[int]string{}
		}
		cs.errs[cs.n] = c.Error
	}
	if cs.n%rowBlock == 0 {
		cs.rows = append(cs.rows, make([]row, 0, rowBlock))
	}
	cs.rows[len(cs.rows)-1] = append(cs.rows[len(cs.rows)-1], r)
	cs.n++
}

// Len is the number of calls.
func (cs *Calls) Len() int { return cs.n }

func (cs *Calls) row(i int) *row { return &cs.rows[i/rowBlock][i%rowBlock] }

func (cs *Calls) bytes(r *row) (key, args, fields []byte) {
	b := cs.data[r.block][r.off:]
	k, a := int(r.keyLen), int(r.argLen)
	return b[:k], b[k : k+a], b[k+a : k+a+int(r.fldLen)]
}

// At returns the ith call's digest, its secrets hidden (Hide).
func (cs *Calls) At(i int) Call {
	r := cs.row(i)
	key, args, fields := cs.bytes(r)
	c := Call{Seq: r.seq, Tool: cs.names[r.tool], Key: string(key), KeyCarrier: cs.names[r.carrier], Fault: cs.names[r.fault],
		Mutating: r.flags&flagMutating != 0, Answered: r.flags&flagAnswered != 0, Outcome: outcome.OK,
		Error: cs.errs[i], Sig: r.sig, Args: string(args), fields: string(fields)}
	switch {
	case r.flags&flagInfo != 0:
		c.Outcome = outcome.Info
	case r.flags&flagFail != 0:
		c.Outcome = outcome.Fail
	}
	if h := cs.Hide; h != nil {
		c.Tool, c.Key, c.Args, c.Error = h(c.Tool), h(c.Key), h(c.Args), h(c.Error)
	}
	return c
}

// Tool is the ith call's tool, as the agent named it.
func (cs *Calls) Tool(i int) string { return cs.names[cs.row(i).tool] }

// SetMutating decides for every call whether its tool is mutating, once per tool.
func (cs *Calls) SetMutating(mutating func(tool string) bool) {
	byTool := map[uint32]bool{}
	for i := range cs.n {
		r := cs.row(i)
		m, ok := byTool[r.tool]
		if !ok {
			m = mutating(cs.names[r.tool])
			byTool[r.tool] = m
		}
		r.flags &^= flagMutating
		if m {
			r.flags |= flagMutating
		}
	}
}

// Sort puts the calls in ascending seq, the order the agent sent them.
func (cs *Calls) Sort() {
	if cs.ordered || cs.n < 2 {
		return
	}
	// Calls complete a few out of order: an insertion sort moves each only past its overtakers.
	for i := 1; i < cs.n; i++ {
		for j := i; j > 0 && cs.row(j).seq < cs.row(j-1).seq; j-- {
			a, b := cs.row(j), cs.row(j-1)
			*a, *b = *b, *a
			ea, oka := cs.errs[j]
			eb, okb := cs.errs[j-1]
			delete(cs.errs, j)
			delete(cs.errs, j-1)
			if oka {
				cs.errs[j-1] = ea
			}
			if okb {
				cs.errs[j] = eb
			}
		}
	}
	cs.ordered = true
}

// keyHash identifies the ith call's key.
func (cs *Calls) keyHash(i int) (h [16]byte, empty bool) {
	key, _, _ := cs.bytes(cs.row(i))
	if len(key) == 0 {
		return h, true
	}
	f := fnv.New128a()
	_, _ = f.Write(key)
	f.Sum(h[:0])
	return h, false
}
