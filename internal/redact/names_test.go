package redact

import "testing"

func TestSensitiveName(t *testing.T) {
	tests := []struct {
		name string
		want bool
	}{
		{"TOKEN", true},
		{"API_TOKEN", true},
		{"GHTOKEN", true},
		{"GITHUB_TOKEN", true},
		{"REFUND_TOKEN", true},
		{"CLIENT_SECRET", true},
		{"DB_PASSWORD", true},
		{"PGPASSWORD", true},
		{"MYSQL_PASSWD", true},
		{"DB_PASS", true},
		{"API_KEY", true},
		{"STRIPE_KEY", true},
		{"KEY", true},
		{"apiKey", true},
		{"APIKEY", true},
		{"AUTH", true},
		{"BASIC_AUTH", true},
		{"GOOGLE_APPLICATION_CREDENTIALS", true},
		{"PRIVATE_KEY", true},
		{"SESSION_ID", true},
		{"X-Auth-Token", true},
		{"X-Api-Key", true},
		{"Api-Key", true},
		{"Authorization", true},
		{"X-Session-Id", true},
		{"sessionCookie", true},

		{"REGION", false},
		{"TARGET", false},
		{"STORE", false},
		{"MONKEY", false},
		{"MONKEY_BUSINESS", false},
		{"KEYBOARD", false},
		{"KEY_PREFIX", false},
		{"KEY_HEADER", false},
		{"IDEMPOTENCY_KEY", false},
		{"Idempotency-Key", false},
		{"TOKEN_FILE", false},
		{"POSTGRES_PASSWORD_FILE", false},
		{"AUTH_URL", false},
		{"PRIVATE_KEY_PATH", false},
		{"AUTHOR", false},
		{"PASSAGE", false},
		{"PWD", false},
		{"DATABASE_URL", false},
		{"X-Tenant", false},
		{"", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := SensitiveName(tc.name); got != tc.want {
				t.Errorf("SensitiveName(%q) = %v, want %v", tc.name, got, tc.want)
			}
		})
	}
}

func TestCredentialHeader(t *testing.T) {
	for name, want := range map[string]bool{
		"authorization": true, "Cookie": true, "Set-Cookie": true, "X-Api-Key": true, "X-Csrf-Token": true,
		"Content-Type": false, "Idempotency-Key": false, "X-Request-Id": false,
	} {
		if got := CredentialHeader(name); got != want {
			t.Errorf("CredentialHeader(%q) = %v, want %v", name, got, want)
		}
	}
}
