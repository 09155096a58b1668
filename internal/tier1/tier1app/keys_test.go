package tier1app

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/vwr-go/vwr/internal/testenv"
	"github.com/vwr-go/vwr/internal/testenv/awstest"
)

// putSecret stores value under a unique name on moto and returns its ARN.
func putSecret(t *testing.T, sm *secretsmanager.Client, value string) string {
	t.Helper()
	out, err := sm.CreateSecret(context.Background(), &secretsmanager.CreateSecretInput{
		Name: aws.String("vwr/tier1-keys/" + testenv.UniqueID(t)), SecretString: aws.String(value),
	})
	if err != nil {
		t.Fatalf("create secret on moto: %v", err)
	}
	return aws.ToString(out.ARN)
}

// TestLoadKeyRingFromSecretsManager: the AWS path reads the ring from the
// secret (both JSON forms the templates and a rotation write), and a missing
// or malformed secret fails naming the variable without echoing the value.
func TestLoadKeyRingFromSecretsManager(t *testing.T) {
	t.Parallel()
	sm := secretsmanager.NewFromConfig(awstest.Config(testenv.Moto(t)))
	ctx := context.Background()
	s1, s2 := strings.Repeat("1", 40), strings.Repeat("2", 40)

	generated := putSecret(t, sm, `{"kid":"k1","secret":"`+s1+`"}`)
	c, err := FromEnv(map[string]string{"VWR_TIER1_TOKEN_KEYS_SECRET_ARN": generated})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(MintsPasses); err != nil {
		t.Fatalf("a minting function with only the secret ARN: %v", err)
	}
	keys, err := LoadKeyRing(ctx, c, MintsPasses, sm)
	if err != nil || keys.SigningKid() != "k1" {
		t.Fatalf("generated secret: kid %v, %v", keys, err)
	}

	rotated := putSecret(t, sm, `{"keys":[{"kid":"k2","secret":"`+s2+`"},{"kid":"k1","secret":"`+s1+`"}]}`)
	c.TokenKeysSecretARN = rotated
	keys2, err := LoadKeyRing(ctx, c, MintsPasses, sm)
	if err != nil || keys2.SigningKid() != "k2" {
		t.Fatalf("rotated secret: %v", err)
	}

	c.TokenKeysSecretARN = "arn:aws:secretsmanager:us-east-1:123456789012:secret:vwr/none-" + testenv.UniqueID(t)
	if _, err := LoadKeyRing(ctx, c, MintsPasses, sm); err == nil || !strings.Contains(err.Error(), "VWR_TIER1_TOKEN_KEYS_SECRET_ARN") {
		t.Fatalf("missing secret: %v", err)
	}

	short := "s3cr3t-value" // under token.MinSecretLen
	c.TokenKeysSecretARN = putSecret(t, sm, `{"kid":"k1","secret":"`+short+`"}`)
	_, err = LoadKeyRing(ctx, c, MintsPasses, sm)
	if err == nil || !strings.Contains(err.Error(), "VWR_TIER1_TOKEN_KEYS_SECRET_ARN") || strings.Contains(err.Error(), short) {
		t.Fatalf("malformed secret: %v", err)
	}
}

// TestKeySourcesAreExclusive: the local variable and the AWS secret never mix.
func TestKeySourcesAreExclusive(t *testing.T) {
	t.Parallel()
	c, err := FromEnv(map[string]string{
		"VWR_TIER1_TOKEN_KEYS":            "k1:" + strings.Repeat("k", 32),
		"VWR_TIER1_TOKEN_KEYS_SECRET_ARN": "arn:aws:secretsmanager:us-east-1:123456789012:secret:vwr",
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(MintsPasses); err == nil || !strings.Contains(err.Error(), "not both") {
		t.Fatalf("both sources: %v", err)
	}
}

// TestLoadOriginVerify: the value comes from its secret's field "value";
// unset, nothing is required; a secret of the wrong shape stops the cold
// start, naming the variable and not the value.
func TestLoadOriginVerify(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	sm := secretsmanager.NewFromConfig(awstest.Config(testenv.Moto(t)))
	if v, err := LoadOriginVerify(ctx, Config{}, sm); err != nil || v != "" {
		t.Fatalf("unset: %q %v", v, err)
	}
	good := strings.Repeat("v", 48)
	v, err := LoadOriginVerify(ctx, Config{OriginVerifySecretARN: putSecret(t, sm, `{"value":"`+good+`"}`)}, sm)
	if err != nil || v != good {
		t.Fatalf("good secret: %q %v", v, err)
	}
	for _, bad := range []string{`{"value":"short"}`, `not json`, `{"other":"` + good + `"}`} {
		_, err := LoadOriginVerify(ctx, Config{OriginVerifySecretARN: putSecret(t, sm, bad)}, sm)
		if err == nil || !strings.Contains(err.Error(), "VWR_ORIGIN_VERIFY_SECRET_ARN") || strings.Contains(err.Error(), "short") {
			t.Errorf("%s: %v", bad, err)
		}
	}
}
