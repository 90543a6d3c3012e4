package endpoint

// ClassifyStatus maps an HTTP status code to an outcome (DESIGN §2), with a message for every
// outcome but ok.
func ClassifyStatus(status int) (Outcome, string) { return classify(status) }
