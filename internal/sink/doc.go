// Package sink serves recording fakes of downstream systems (a payment processor, a CRM, a
// mailer) on loopback. The tool under test is pointed at a sink, and every request that reaches
// it is recorded, so a scenario can count side effects where they land.
//
//	s, err := sink.Start(sink.Config{Name: "payment_processor", Routes: []sink.Route{{
//		Name: "refunds", Method: "POST", Path: "/v1/refunds", Status: 200, Body: map[string]any{"id": "pp_1"},
//	}}})
//	defer s.Close()
//	// point the tool at s.URL(), call it, then:
//	s.Snapshot()["refunds"] // the recorded requests of the route
//
// Routes can misbehave: delay, fail_first, hang_first and drop_response_first make the
// downstream slow, failing, hanging, or commit-then-vanish.
package sink
