package main

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/vwr-go/vwr/internal/notify"
)

// SQS "admitted" notifications for `vwr local`: off unless SQS_ENABLED=true
// and SQS_QUEUE_URL are set. The AWS SDK reads AWS_ENDPOINT_URL (moto or
// LocalStack for a local check) from the process environment itself.
func init() {
	registerLocal(localExtension{
		Name: "sqs",
		Configure: func(s *localStack) error {
			cfg, err := notify.FromEnv(s.Env)
			if err != nil {
				return err
			}
			var n notify.Notifier
			if cfg.Enabled && s.SQSEndpoint != "" {
				n, err = openNotifierAt(cfg, s)
			} else {
				n, err = notify.Open(context.Background(), cfg, notify.Options{Logger: s.Log})
			}
			if err != nil {
				return err
			}
			s.QueueOptions.Notifier = n
			if cfg.Enabled {
				s.Notef("SQS_ENABLED: publishing admissions to %s", cfg.QueueURL)
			}
			return nil
		},
		Mount: func(ctx context.Context, s *localStack) error {
			// Configure put it there; another extension replacing it keeps its own lifecycle.
			n, ok := s.QueueOptions.Notifier.(notify.Notifier)
			if !ok {
				return nil
			}
			if err := n.Register(s.Queue.Metrics.Registry()); err != nil {
				return err
			}
			// After the worker's last pass, so its admissions are sent too.
			s.OnStop(func() {
				fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
				defer cancel()
				if err := n.Close(fctx); err != nil {
					s.Log.Warn("sqs notifications not fully flushed", "err", err.Error())
				}
			})
			return nil
		},
	})
}

// openNotifierAt is notify.Open with the SQS client sent to s.SQSEndpoint
// (`vwr loadtest` puts a proxy it can cut there).
func openNotifierAt(cfg notify.Config, s *localStack) (notify.Notifier, error) {
	client, err := notify.NewClient(context.Background())
	if err != nil {
		return nil, err
	}
	client = sqs.New(client.Options(), func(o *sqs.Options) { o.BaseEndpoint = aws.String(s.SQSEndpoint) })
	return notify.New(cfg, client, notify.Options{Logger: s.Log})
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}
