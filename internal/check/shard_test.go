package check

import (
	"slices"
	"testing"

	"github.com/idemtest/idemtest/internal/toolset"
)

func TestShard(t *testing.T) {
	tool := func(name string, mutating bool) toolset.ToolInfo {
		info := toolset.ToolInfo{Mutating: mutating}
		info.Name = name
		return info
	}
	// The endpoint's order, not sorted; list_refunds reads.
	tools := []toolset.ToolInfo{tool("refund", true), tool("list_refunds", false), tool("charge", true), tool("cancel", true)}
	tests := []struct {
		name string
		opts Options
		want []string
	}{
		{name: "no shard", want: []string{"refund", "charge", "cancel"}},
		{name: "1/2 by sorted name", opts: Options{ShardK: 1, ShardN: 2}, want: []string{"refund", "cancel"}},
		{name: "2/2", opts: Options{ShardK: 2, ShardN: 2}, want: []string{"charge"}},
		{name: "more shards than tools", opts: Options{ShardK: 4, ShardN: 4}, want: nil},
		{name: "after --skip-tool", opts: Options{ShardK: 1, ShardN: 2, SkipTools: []string{"cancel"}}, want: []string{"charge"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, ti := range shard(tools, tt.opts) {
				got = append(got, ti.Name)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}
