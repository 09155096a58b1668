package tier1app

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestFromEnvDefaults(t *testing.T) {
	t.Parallel()
	c, err := FromEnv(map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	s, d := c.Service(), c.Dynamo()
	if c.Store != StoreDynamoDB || c.AdvancerTicks != DefaultAdvancerTicks || d.EventsTable != "vwr-tier1-events" || d.PositionsTable != "vwr-tier1-positions" ||
		s.PositionTTL != 24*time.Hour || s.TokenTTL != 600*time.Second || s.StatusCacheTTL != time.Second ||
		s.DefaultShards != 1 || s.DefaultBatchSize != 500 || s.TickEvery != 10*time.Second ||
		c.Log.Level != "info" || c.Log.Slow.D() != 500*time.Millisecond {
		t.Fatalf("defaults = %+v, service %+v, tables %+v", c, s, d)
	}
	if err := c.Validate(NoPassMinting); err != nil {
		t.Fatalf("defaults without pass keys, for a function that mints none: %v", err)
	}
	if err := c.Validate(MintsPasses); err == nil || !strings.Contains(err.Error(), "VWR_TIER1_TOKEN_KEYS is required") {
		t.Fatalf("a minting function without keys: %v", err)
	}
}

func TestFromEnvReadsEverything(t *testing.T) {
	t.Parallel()
	secret := strings.Repeat("k", 32)
	c, err := FromEnv(map[string]string{
		"VWR_TIER1_STORE": "redis", "VWR_TIER1_REDIS_URL": "redis://r:6379/1",
		"VWR_TIER1_EVENTS_TABLE": "ev", "VWR_TIER1_POSITIONS_TABLE": "pos",
		"VWR_TIER1_TOKEN_KEYS": "a:" + secret, "VWR_ADMIN_TOKEN": "adm", "VWR_ADMITTED_STATS_TABLE": "stats",
		"VWR_TIER1_POSITION_TTL": "2h", "VWR_TIER1_TOKEN_TTL": "90s", "VWR_TIER1_STATUS_CACHE_TTL": "250ms",
		"VWR_TIER1_DEFAULT_SHARDS": "4", "VWR_TIER1_DEFAULT_BATCH_SIZE": "50",
		"ADVANCER_TICKS": "3", "ADVANCER_TICK_SECONDS": "5", "LOG_LEVEL": "warn", "LOG_SLOW_MS": "80",
	})
	if err != nil {
		t.Fatal(err)
	}
	s, d := c.Service(), c.Dynamo()
	if c.Store != StoreRedis || c.RedisURL != "redis://r:6379/1" || d.EventsTable != "ev" || d.PositionsTable != "pos" ||
		c.AdminToken != "adm" || c.AdmittedStatsTable != "stats" || c.AdvancerTicks != 3 ||
		s.PositionTTL != 2*time.Hour || s.TokenTTL != 90*time.Second || s.StatusCacheTTL != 250*time.Millisecond ||
		s.DefaultShards != 4 || s.DefaultBatchSize != 50 || s.TickEvery != 5*time.Second ||
		c.Log.Level != "warn" || c.Log.Slow.D() != 80*time.Millisecond {
		t.Fatalf("config = %+v, service %+v", c, s)
	}
	if err := c.Validate(MintsPasses); err != nil {
		t.Fatal(err)
	}
}

func TestConfigErrorsNameTheVariable(t *testing.T) {
	t.Parallel()
	bad := []struct{ name, value string }{
		{"VWR_TIER1_STATUS_CACHE_TTL", "2s"},
		{"VWR_TIER1_DEFAULT_SHARDS", "65"},
		{"VWR_TIER1_DEFAULT_SHARDS", "0"},
		{"VWR_TIER1_DEFAULT_BATCH_SIZE", "many"},
		{"VWR_TIER1_TOKEN_TTL", "-1s"},
		{"VWR_TIER1_POSITION_TTL", "24"},
		{"ADVANCER_TICK_SECONDS", "0"},
		{"ADVANCER_TICKS", "61"},
		{"VWR_TIER1_STORE", "postgres"},
		{"VWR_TIER1_TOKEN_KEYS", "nokid"},
		{"LOG_LEVEL", "chatty"},
	}
	for _, tc := range bad {
		t.Run(tc.name+"="+tc.value, func(t *testing.T) {
			t.Parallel()
			c, err := FromEnv(map[string]string{tc.name: tc.value})
			if err == nil {
				err = c.Validate(NoPassMinting)
			}
			if err == nil || !strings.Contains(err.Error(), tc.name) {
				t.Fatalf("%s=%s: %v, want an error naming it", tc.name, tc.value, err)
			}
		})
	}
	c, _ := FromEnv(map[string]string{"VWR_TIER1_STORE": "redis"})
	if _, _, err := OpenStore(context.Background(), c); err == nil || !strings.Contains(err.Error(), "VWR_TIER1_REDIS_URL is required") {
		t.Fatalf("redis store without a URL: %v", err)
	}
	c, _ = FromEnv(map[string]string{"VWR_TIER1_EVENTS_TABLE": "same", "VWR_TIER1_POSITIONS_TABLE": "same"})
	if err := c.Validate(NoPassMinting); err == nil || !strings.Contains(err.Error(), "must differ") {
		t.Fatalf("equal table names: %v", err)
	}
}
