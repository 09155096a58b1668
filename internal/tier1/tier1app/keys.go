package tier1app

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/vwr-go/vwr/internal/token"
)

// SecretReader is the one Secrets Manager call the key loader makes.
type SecretReader interface {
	GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, opts ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
}

// LoadKeyRing returns the pass keys: from the Secrets Manager secret
// VWR_TIER1_TOKEN_KEYS_SECRET_ARN names when it is set (the AWS templates'
// way), else from VWR_TIER1_TOKEN_KEYS (local runs, tests). Boot calls it
// once per cold start and the Function keeps the ring, so a warm invocation
// makes no Secrets Manager call; a rotation reaches each instance at its next
// cold start, which is why the retiring kid keeps verifying for a while
// (docs/deploy.md, key rotation). sm may be nil: the SDK's default chain builds one.
func LoadKeyRing(ctx context.Context, c Config, mints Passes, sm SecretReader) (*token.KeyRing, error) {
	if c.TokenKeysSecretARN == "" {
		return c.KeyRing(mints)
	}
	if sm == nil {
		awsCfg, err := awsconfig.LoadDefaultConfig(ctx)
		if err != nil {
			return nil, fmt.Errorf("VWR_TIER1_TOKEN_KEYS_SECRET_ARN: load AWS config: %w", err)
		}
		sm = secretsmanager.NewFromConfig(awsCfg)
	}
	out, err := sm.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(c.TokenKeysSecretARN)})
	if err != nil {
		return nil, fmt.Errorf("VWR_TIER1_TOKEN_KEYS_SECRET_ARN: read the secret: %w", err)
	}
	keys, err := token.ParseKeyRing(aws.ToString(out.SecretString))
	if err != nil {
		// The parse error names kids, never secrets.
		return nil, fmt.Errorf("VWR_TIER1_TOKEN_KEYS_SECRET_ARN: %w", err)
	}
	return keys, nil
}
