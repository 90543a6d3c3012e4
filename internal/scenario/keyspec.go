package scenario

// String says where the key travels, as reports and traces show it: "header Idempotency-Key",
// "arg idempotencyKey" or "meta idempotencyKey".
func (k KeySpec) String() string {
	switch {
	case k.Arg != "":
		return "arg " + k.Arg
	case k.Meta != "":
		return "meta " + k.Meta
	case k.Header != "":
		return "header " + k.Header
	}
	return "none"
}
