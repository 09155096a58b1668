package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
)

// Config is what an operator chooses at synth time, from the CDK context
// (cdk.json, or `cdk deploy -c key=value`). Values that may change between
// deployments without a new synthesis are CloudFormation parameters instead
// (README, Deploy).
type Config struct {
	// Account is the target account (CDK_DEFAULT_ACCOUNT); empty keeps the
	// stacks account-agnostic.
	Account string
	// Region holds Tier 1, Tier 2 and Ops (context vwr:region, else
	// CDK_DEFAULT_REGION). The front door always goes to us-east-1, where
	// CloudFront-scope WAF and KeyValueStores must live.
	Region string
	// ProtectedOrigin is the domain of the site the waiting room protects
	// (the default behaviour's origin; context vwr:protectedOrigin).
	ProtectedOrigin string
	// AdvancerTicks and AdvancerTickSeconds are the advancer's ticks per
	// scheduled minute and the gap between them.
	AdvancerTicks, AdvancerTickSeconds int
	// LambdaDir holds <fn>/bootstrap from `make lambdas` (vwr:lambdaDir).
	LambdaDir string
	// StaticDir is the waiting page (vwr:staticDir).
	StaticDir string
	// EdgeDir holds the CloudFront Functions' JavaScript (vwr:edgeDir).
	EdgeDir string
	// Tier2 adds the Tier 2 stack (VPC, ElastiCache, Fargate) and its
	// front door behaviour (vwr:tier2, default true).
	Tier2 bool
	// OriginPrefixList is the id of the region's managed prefix list
	// com.amazonaws.global.cloudfront.origin-facing (vwr:cloudFrontPrefixList,
	// `aws ec2 describe-managed-prefix-lists`). When set, the Tier 2 load
	// balancer admits only CloudFront; empty leaves it open to the internet.
	OriginPrefixList string
}

// FrontDoorRegion is where CloudFront-scope resources must be created.
const FrontDoorRegion = "us-east-1"

// DefaultConfig is the configuration cdk.json starts from.
func DefaultConfig() Config {
	return Config{
		Region:              FrontDoorRegion,
		AdvancerTicks:       6,
		AdvancerTickSeconds: 10,
		LambdaDir:           "../bin",
		StaticDir:           "../static/vwr",
		EdgeDir:             "edge",
		Tier2:               true,
	}
}

// ConfigFromContext reads the vwr:* context keys over DefaultConfig.
func ConfigFromContext(app awscdk.App) (Config, error) {
	c := DefaultConfig()
	c.Account = os.Getenv("CDK_DEFAULT_ACCOUNT")
	if r := os.Getenv("CDK_DEFAULT_REGION"); r != "" {
		c.Region = r
	}
	str := func(key string, dst *string) {
		if v, ok := app.Node().TryGetContext(&key).(string); ok && v != "" {
			*dst = v
		}
	}
	var errs []error
	num := func(key string, dst *int) {
		switch v := app.Node().TryGetContext(&key).(type) {
		case float64:
			*dst = int(v)
		case string:
			n, err := strconv.Atoi(v)
			if err != nil {
				errs = append(errs, fmt.Errorf("context %s: %q is not a number", key, v))
			}
			*dst = n
		}
	}
	str("vwr:region", &c.Region)
	str("vwr:protectedOrigin", &c.ProtectedOrigin)
	str("vwr:lambdaDir", &c.LambdaDir)
	str("vwr:staticDir", &c.StaticDir)
	str("vwr:edgeDir", &c.EdgeDir)
	str("vwr:cloudFrontPrefixList", &c.OriginPrefixList)
	num("vwr:advancerTicks", &c.AdvancerTicks)
	num("vwr:advancerTickSeconds", &c.AdvancerTickSeconds)
	key := "vwr:tier2"
	switch v := app.Node().TryGetContext(&key).(type) {
	case bool:
		c.Tier2 = v
	case string:
		c.Tier2 = v != "false"
	}
	if err := c.Validate(); err != nil {
		errs = append(errs, err)
	}
	return c, errors.Join(errs...)
}

// Validate checks the configuration; every message names its context key.
func (c Config) Validate() error {
	var errs []error
	if c.ProtectedOrigin == "" {
		errs = append(errs, errors.New("context vwr:protectedOrigin is required: the domain of the site behind the waiting room"))
	}
	if c.OriginPrefixList != "" && !strings.HasPrefix(c.OriginPrefixList, "pl-") {
		errs = append(errs, errors.New("context vwr:cloudFrontPrefixList must be a prefix list id (pl-…)"))
	}
	if c.AdvancerTicks < 1 || c.AdvancerTicks > 12 {
		errs = append(errs, errors.New("context vwr:advancerTicks must be in [1, 12]"))
	}
	if c.AdvancerTickSeconds < 1 || c.AdvancerTicks*c.AdvancerTickSeconds > 60 {
		errs = append(errs, errors.New("context vwr:advancerTickSeconds: ticks × seconds must be in [1, 60]"))
	}
	return errors.Join(errs...)
}
