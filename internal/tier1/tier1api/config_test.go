package tier1api

import (
	"strings"
	"testing"
	"time"
)

// Not parallel: it sets process environment variables.
func TestFromEnv(t *testing.T) {
	key := "k1:" + strings.Repeat("s", 32)
	cases := []struct {
		name    string
		env     map[string]string
		mints   bool
		wantErr string
		check   func(t *testing.T, c Config)
	}{
		{"defaults", map[string]string{"VWR_TIER1_TOKEN_KEYS": key}, true, "", func(t *testing.T, c Config) {
			if c.Store != StoreDynamoDB || c.AdvancerTicks != 6 || c.Service.TickEvery != 10*time.Second ||
				c.Dynamo.EventsTable != "vwr-tier1-events" || c.Dynamo.PositionsTable != "vwr-tier1-positions" {
				t.Errorf("defaults %+v", c)
			}
		}},
		{"advancer settings", map[string]string{"ADVANCER_TICKS": "3", "ADVANCER_TICK_SECONDS": "20"}, false, "", func(t *testing.T, c Config) {
			if c.AdvancerTicks != 3 || c.Service.TickEvery != 20*time.Second {
				t.Errorf("got %d ticks every %s", c.AdvancerTicks, c.Service.TickEvery)
			}
		}},
		{"stats table unset", nil, false, "", func(t *testing.T, c Config) {
			if c.AdmittedStatsTable != "" {
				t.Errorf("AdmittedStatsTable %q, want empty", c.AdmittedStatsTable)
			}
		}},
		{"stats table", map[string]string{"VWR_ADMITTED_STATS_TABLE": " vwr-admitted-stats "}, false, "", func(t *testing.T, c Config) {
			if c.AdmittedStatsTable != "vwr-admitted-stats" {
				t.Errorf("AdmittedStatsTable %q", c.AdmittedStatsTable)
			}
		}},
		{"minting needs keys", nil, true, "VWR_TIER1_TOKEN_KEYS is required", nil},
		{"non-minting runs without keys", nil, false, "", nil},
		{"short key", map[string]string{"VWR_TIER1_TOKEN_KEYS": "k1:short"}, false, "VWR_TIER1_TOKEN_KEYS", nil},
		{"unknown store", map[string]string{"VWR_TIER1_STORE": "mysql"}, false, "VWR_TIER1_STORE", nil},
		{"redis without url", map[string]string{"VWR_TIER1_STORE": "redis"}, false, "VWR_TIER1_REDIS_URL", nil},
		{"ticks not a number", map[string]string{"ADVANCER_TICKS": "six"}, false, "ADVANCER_TICKS", nil},
		{"ticks out of range", map[string]string{"ADVANCER_TICKS": "100"}, false, "ADVANCER_TICKS", nil},
		{"same table twice", map[string]string{"VWR_TIER1_EVENTS_TABLE": "t", "VWR_TIER1_POSITIONS_TABLE": "t"}, false, "VWR_TIER1_POSITIONS_TABLE", nil},
	}
	vars := []string{"VWR_TIER1_STORE", "VWR_TIER1_REDIS_URL", "VWR_TIER1_TOKEN_KEYS", "VWR_ADMIN_TOKEN", "ADVANCER_TICKS",
		"ADVANCER_TICK_SECONDS", "VWR_TIER1_EVENTS_TABLE", "VWR_TIER1_POSITIONS_TABLE", "VWR_ADMITTED_STATS_TABLE"}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, v := range vars {
				t.Setenv(v, c.env[v])
			}
			cfg, err := FromEnv(c.mints)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err %v, want one naming %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.check != nil {
				c.check(t, cfg)
			}
		})
	}
}
