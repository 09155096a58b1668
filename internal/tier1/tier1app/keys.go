package tier1app

import (
	"context"
	"encoding/json"
	"errors"
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

// LoadOriginVerify returns the origin-verify value the visitor routes
// require: the field "value" of the secret VWR_ORIGIN_VERIFY_SECRET_ARN
// names, or "" (nothing required) when it is unset. sm may be nil.
func LoadOriginVerify(ctx context.Context, c Config, sm SecretReader) (string, error) {
	if c.OriginVerifySecretARN == "" {
		return "", nil
	}
	if sm == nil {
		awsCfg, err := awsconfig.LoadDefaultConfig(ctx)
		if err != nil {
			return "", fmt.Errorf("VWR_ORIGIN_VERIFY_SECRET_ARN: load AWS config: %w", err)
		}
		sm = secretsmanager.NewFromConfig(awsCfg)
	}
	out, err := sm.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(c.OriginVerifySecretARN)})
	if err != nil {
		return "", fmt.Errorf("VWR_ORIGIN_VERIFY_SECRET_ARN: read the secret: %w", err)
	}
	var v struct {
		Value string `json:"value"`
	}
	if err := json.Unmarshal([]byte(aws.ToString(out.SecretString)), &v); err != nil || len(v.Value) < 16 {
		return "", errors.New(`VWR_ORIGIN_VERIFY_SECRET_ARN: want {"value":"…"} with at least 16 characters`)
	}
	return v.Value, nil
}
