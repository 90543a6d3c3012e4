package endpoint

import (
	"context"
	"errors"
	"sync/atomic"
)

// Instance names one instance of an endpoint served by several (DESIGN §11): the replicas of a
// service idemtest starts, or the urls: of a deployment it does not.
type Instance struct {
	// Index is the instance's place in its set, from 1 (replica N of a service is instance N).
	Index int `json:"index"`
	// URL is where the instance is called: its URL as configured ({tool} left in), or the
	// command line of a stdio MCP server.
	URL string `json:"url"`
}

// InstanceSet is an endpoint of several instances, each an endpoint of its own (its own
// connections, its own MCP session). The runner picks the instance of each call with
// Member; Call and Prepare, for callers that do not pick (a probe, a tool listing), go round
// the instances in turn.
type InstanceSet interface {
	Endpoint
	// Instances names the instances, in order.
	Instances() []Instance
	// Member returns the endpoint of instance i (from 0).
	Member(i int) Endpoint
}

// Replicas is an InstanceSet.
type Replicas struct {
	members   []Endpoint
	instances []Instance
	turn      atomic.Uint64
}

// listedReplicas is a Replicas whose members list their tools (MCP servers, OpenAPI
// operations): the first instance answers for the set.
type listedReplicas struct{ *Replicas }

// Tools lists the first instance's tools: every instance serves the same tools.
func (r listedReplicas) Tools(ctx context.Context) ([]Tool, error) {
	return r.members[0].(ToolLister).Tools(ctx)
}

// Tool looks a tool up on the first instance: every instance serves the same tools.
func (r listedReplicas) Tool(ctx context.Context, name string) (Tool, bool, error) {
	return r.members[0].(ToolLister).Tool(ctx, name)
}

// NewReplicas returns the set of members, named by instances (one each, in order). The set
// lists its tools when its members do.
func NewReplicas(members []Endpoint, instances []Instance) InstanceSet {
	r := &Replicas{members: members, instances: instances}
	if _, ok := members[0].(ToolLister); ok {
		return listedReplicas{r}
	}
	return r
}

// Instances names the instances, in order.
func (r *Replicas) Instances() []Instance { return r.instances }

// Member returns the endpoint of instance i (from 0).
func (r *Replicas) Member(i int) Endpoint { return r.members[i] }

func (r *Replicas) next() Endpoint {
	return r.members[(r.turn.Add(1)-1)%uint64(len(r.members))]
}

// Call sends req to the next instance in turn.
func (r *Replicas) Call(ctx context.Context, req Request) Result { return r.next().Call(ctx, req) }

// Prepare readies req on the next instance in turn.
func (r *Replicas) Prepare(ctx context.Context, req Request, opts PrepareOptions) Prepared {
	return r.next().Prepare(ctx, req, opts)
}

// Close closes every instance's endpoint.
func (r *Replicas) Close() error {
	var errs []error
	for _, m := range r.members {
		errs = append(errs, m.Close())
	}
	return errors.Join(errs...)
}
