package runner

import (
	"hash/fnv"
	"math/rand/v2"

	"github.com/idemtest/idemtest/internal/dispatch"
	"github.com/idemtest/idemtest/internal/endpoint"
	"github.com/idemtest/idemtest/internal/scenario"
)

// spreader picks the instances of one trial's calls to endpoints of several instances
// (DESIGN §11). It belongs to the trial, so a trial spreads its calls the same way whatever
// ran before it.
type spreader struct {
	session string
	rng     *rand.Rand
	// next is, per endpoint, the instance of the next new key (round-robin); last, per endpoint
	// and key, the instance the key last went to.
	next map[string]int
	last map[string]int
}

// targets returns where the n sends of one call go (n copies of a fan-out, or 1): the
// instances' endpoints, and the instances; nil, nil when ep is a single instance.
func (sp *spreader) targets(ep endpoint.Endpoint, def *scenario.Endpoint, key string, n int) ([]endpoint.Endpoint, []*endpoint.Instance) {
	set, ok := ep.(endpoint.InstanceSet)
	if !ok {
		return nil, nil
	}
	all := set.Instances()
	idx := sp.pick(def, key, len(all), n)
	eps := make([]endpoint.Endpoint, n)
	insts := make([]*endpoint.Instance, n)
	for i, j := range idx {
		eps[i] = set.Member(j)
		inst := all[j]
		insts[i] = &inst
	}
	return eps, insts
}

// pick returns the instance (from 0) of each of n sends with key to an endpoint of size
// instances. Round-robin sends a new key (or a call without one) to the endpoint's next
// instance and each later send of a key to the instance after the one it last went to, so a
// retry, a retry_of step or a fan-out copy never lands where the send before it did.
func (sp *spreader) pick(def *scenario.Endpoint, key string, size, n int) []int {
	out := make([]int, n)
	switch def.Spread {
	case dispatch.SpreadSame:
		return out
	case dispatch.SpreadRandom:
		if sp.rng == nil {
			h := fnv.New64a()
			h.Write([]byte(sp.session))
			sp.rng = rand.New(rand.NewPCG(h.Sum64(), 0))
		}
		for i := range out {
			out[i] = sp.rng.IntN(size)
		}
		return out
	}
	if sp.next == nil {
		sp.next, sp.last = map[string]int{}, map[string]int{}
	}
	lastKey := def.Name + "\x00" + key
	base, seen := sp.last[lastKey]
	if key != "" && seen {
		base++
	} else {
		base = sp.next[def.Name]
		sp.next[def.Name] = (base + 1) % size
	}
	for i := range out {
		out[i] = (base + i) % size
	}
	if key != "" {
		sp.last[lastKey] = out[n-1]
	}
	return out
}
