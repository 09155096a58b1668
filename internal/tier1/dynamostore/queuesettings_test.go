package dynamostore_test

import (
	"testing"

	"github.com/vwr-go/vwr/internal/tier1/dynamostore"
	"github.com/vwr-go/vwr/services/queue"
	"github.com/vwr-go/vwr/services/queue/configtest"
)

// The events table is a queue.ConfigStore too (moto).
func TestQueueConfigStoreConformance(t *testing.T) {
	t.Parallel()
	configtest.Run(t, func(t *testing.T) queue.ConfigStore {
		return newStore(t, dynamostore.Config{})
	})
}
