// Package scenario is idemtest's typed model of a scenario: its steps, endpoints, services,
// sinks, probes and the config's check section, with the positions they were written at.
//
// Both step forms (the native call_tool/assert/sleep keys and the hosted-runner action/tool/check
// form) load into the same Step; after loading nothing knows which form it was. Package
// scenario/load reads files into this model; the model's own helpers (an endpoint's defaults, an
// ad hoc endpoint from flags, the URL and host checks the runner repeats on rendered values) live
// here:
//
//	list, err := load.Scenarios(ctx, []string{"examples/scenarios"}, load.Options{})
//	for _, s := range list {
//		for _, st := range s.Steps {
//			if st.Kind == scenario.CallStep {
//				fmt.Println(st.ID, st.Tool, s.Endpoints[st.Endpoint].Key) // step1 issue_refund header Idempotency-Key
//			}
//		}
//	}
package scenario
