package notify_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/vwr-go/vwr/internal/envconf"
	"github.com/vwr-go/vwr/internal/notify"
)

func TestConfigFromEnv(t *testing.T) {
	t.Parallel()
	const fifo = "https://sqs.us-east-1.amazonaws.com/123456789012/vwr-admitted.fifo"
	tests := []struct {
		name    string
		env     map[string]string
		want    notify.Config
		wantErr string // substring of FromEnv's or Open's error
	}{
		{
			name: "off by default",
			env:  map[string]string{},
			want: notify.Config{}.WithDefaults(),
		},
		{
			name: "enabled with overrides",
			env: map[string]string{
				"SQS_ENABLED": "true", "SQS_QUEUE_URL": fifo,
				"SQS_BUFFER_SIZE": "50", "SQS_SEND_TIMEOUT_MS": "300", "SQS_MAX_ATTEMPTS": "2", "SQS_RETRY_BACKOFF_MS": "7",
			},
			want: notify.Config{
				Enabled: true, QueueURL: fifo, BufferSize: 50, MaxAttempts: 2,
				SendTimeout: envconf.Millis(300 * time.Millisecond), RetryBackoff: envconf.Millis(7 * time.Millisecond),
			},
		},
		{name: "bad bool", env: map[string]string{"SQS_ENABLED": "yes please"}, wantErr: "SQS_ENABLED"},
		{name: "bad buffer", env: map[string]string{"SQS_BUFFER_SIZE": "-1"}, wantErr: "SQS_BUFFER_SIZE"},
		{name: "zero timeout", env: map[string]string{"SQS_SEND_TIMEOUT_MS": "0"}, wantErr: "SQS_SEND_TIMEOUT_MS"},
		{name: "enabled without url", env: map[string]string{"SQS_ENABLED": "true"}, wantErr: "SQS_QUEUE_URL is required"},
		{name: "standard queue", env: map[string]string{"SQS_ENABLED": "true", "SQS_QUEUE_URL": "https://sqs/1/q"}, wantErr: "FIFO"},
		{name: "too many attempts", env: map[string]string{"SQS_ENABLED": "true", "SQS_QUEUE_URL": fifo, "SQS_MAX_ATTEMPTS": "11"}, wantErr: "SQS_MAX_ATTEMPTS"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := notify.FromEnv(tt.env)
			if err == nil {
				var n notify.Notifier
				n, err = notify.Open(context.Background(), cfg, notify.Options{})
				if err == nil {
					defer n.Close(context.Background())
				}
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one naming %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg != tt.want {
				t.Fatalf("config = %+v, want %+v", cfg, tt.want)
			}
		})
	}
}

func TestOpenDisabledDiscards(t *testing.T) {
	t.Parallel()
	n, err := notify.Open(context.Background(), notify.Config{}, notify.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := n.(*notify.Publisher); ok {
		t.Fatal("a disabled config must not start a publisher")
	}
	if err := n.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}
