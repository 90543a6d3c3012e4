package redact

import (
	"strings"
	"unicode"
)

// secretParts are the word parts of a name that make its value a secret wherever they stand
// (API_TOKEN, DB_PASS, X-Auth-Token, sessionCookie).
var secretParts = map[string]bool{
	"TOKEN": true, "TOKENS": true, "SECRET": true, "SECRETS": true,
	"PASSWORD": true, "PASSWORDS": true, "PASSWD": true, "PASS": true, "PASSPHRASE": true,
	"AUTH": true, "OAUTH": true, "AUTHORIZATION": true,
	"CREDENTIAL": true, "CREDENTIALS": true, "CREDS": true,
	"PRIVATE": true, "SESSION": true, "COOKIE": true, "COOKIES": true,
	"APIKEY": true, "ACCESSKEY": true, "SECRETKEY": true, "PRIVATEKEY": true,
	"BEARER": true, "JWT": true,
}

// secretInfixes are secret words long enough to be recognised inside a part too
// (GHTOKEN, DBPASSWORD, CLIENTSECRET).
var secretInfixes = []string{"TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL"}

// describingParts end a name whose value describes a secret instead of holding it: where it is
// (TOKEN_FILE, AUTH_URL, PASSWORD_PATH), what it is called, how long it lives.
var describingParts = map[string]bool{
	"FILE": true, "PATH": true, "DIR": true, "URL": true, "URI": true, "HOST": true, "PORT": true,
	"ENDPOINT": true, "HEADER": true, "NAME": true, "TYPE": true, "MODE": true, "METHOD": true,
	"TTL": true, "TIMEOUT": true, "EXPIRY": true, "ENABLED": true, "LENGTH": true, "SIZE": true,
	"FORMAT": true, "PREFIX": true, "SCHEME": true,
}

// SensitiveName reports whether a variable or header named name holds a secret by its name:
// one of its word parts (split at _, -, . and camelCase) is TOKEN, SECRET, PASSWORD, PASSWD,
// PASS, AUTH, CREDENTIAL(S), PRIVATE, SESSION, COOKIE, JWT, or it ends in KEY (API_KEY,
// STRIPE_KEY; not MONKEY, KEY_PREFIX or IDEMPOTENCY_KEY), unless its last part says the value
// is about a secret rather than one (TOKEN_FILE, AUTH_URL, PASSWORD_PATH).
func SensitiveName(name string) bool {
	parts := wordParts(name)
	if len(parts) == 0 || describingParts[parts[len(parts)-1]] {
		return false
	}
	last := len(parts) - 1
	if parts[last] == "KEY" && (last == 0 || parts[last-1] != "IDEMPOTENCY") {
		return true
	}
	for _, p := range parts {
		if secretParts[p] {
			return true
		}
		for _, w := range secretInfixes {
			if strings.Contains(p, w) {
				return true
			}
		}
	}
	return false
}

// wordParts splits name at _, -, . and lower-to-upper case changes, upper-cased.
func wordParts(name string) []string {
	var parts []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			parts = append(parts, strings.ToUpper(string(cur)))
			cur = cur[:0]
		}
	}
	prevLower := false
	for _, r := range name {
		switch {
		case r == '_' || r == '-' || r == '.' || unicode.IsSpace(r):
			flush()
			prevLower = false
			continue
		case unicode.IsUpper(r) && prevLower:
			flush()
		}
		cur = append(cur, r)
		prevLower = unicode.IsLower(r) || unicode.IsDigit(r)
	}
	flush()
	return parts
}

// CredentialHeader reports whether the values of the HTTP header name are credentials: one of
// CredentialHeaders, or a header whose name says so (X-Auth-Token, Api-Key, X-Session-Id), but
// not Idempotency-Key.
func CredentialHeader(name string) bool {
	for _, h := range CredentialHeaders {
		if strings.EqualFold(h, name) {
			return true
		}
	}
	return SensitiveName(name)
}
