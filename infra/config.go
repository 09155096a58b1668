package main

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
)

// Config is what an operator chooses at synth time, from the CDK context
// (cdk.json, or `cdk deploy -c key=value`). Values that may change between
// deployments without a new synthesis are CloudFormation parameters instead
// (docs/deploy.md).
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
	// com.amazonaws.global.cloudfront.origin-facing (vwr:cloudFrontPrefixList).
	// The Tier 2 load balancer admits only that list; empty looks its id up
	// at deploy time.
	OriginPrefixList string
	// DomainName and CertificateARN put the front door on the shop's own
	// hostname (vwr:domainName, vwr:certificateArn: an ACM certificate in
	// us-east-1 covering it); both or neither.
	DomainName, CertificateARN string
	// AdvancerReservedConcurrency, when above 0, reserves that many
	// concurrent advancers (vwr:advancerReservedConcurrency). Off by default:
	// a new account's Lambda quota of 10 cannot spare it, and tick slots make
	// overlapping runs safe.
	AdvancerReservedConcurrency int
	// QueueRepository names an existing ECR repository for the Tier 2 image
	// (vwr:queueRepository); empty has the VwrRegistry stack create one.
	QueueRepository string
}

var (
	domainRE = regexp.MustCompile(`^([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$`)
	repoRE   = regexp.MustCompile(`^[a-z0-9]+([._/-][a-z0-9]+)*$`)
)

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
	str("vwr:domainName", &c.DomainName)
	str("vwr:certificateArn", &c.CertificateARN)
	str("vwr:queueRepository", &c.QueueRepository)
	num("vwr:advancerReservedConcurrency", &c.AdvancerReservedConcurrency)
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
	if (c.DomainName == "") != (c.CertificateARN == "") {
		errs = append(errs, errors.New("context vwr:domainName and vwr:certificateArn go together: the hostname and an ACM certificate for it in us-east-1"))
	}
	if c.DomainName != "" && !domainRE.MatchString(c.DomainName) {
		errs = append(errs, fmt.Errorf("context vwr:domainName %q is not a host name", c.DomainName))
	}
	if c.CertificateARN != "" && !strings.HasPrefix(c.CertificateARN, "arn:aws:acm:"+FrontDoorRegion+":") {
		errs = append(errs, errors.New("context vwr:certificateArn must be an ACM certificate in us-east-1 (arn:aws:acm:us-east-1:…), where CloudFront reads certificates"))
	}
	if c.AdvancerReservedConcurrency < 0 || c.AdvancerReservedConcurrency > 10 {
		errs = append(errs, errors.New("context vwr:advancerReservedConcurrency must be in [0, 10] (0: none reserved)"))
	}
	if c.QueueRepository != "" && !repoRE.MatchString(c.QueueRepository) {
		errs = append(errs, fmt.Errorf("context vwr:queueRepository %q is not an ECR repository name", c.QueueRepository))
	}
	if c.AdvancerTicks < 1 || c.AdvancerTicks > 12 {
		errs = append(errs, errors.New("context vwr:advancerTicks must be in [1, 12]"))
	}
	if c.AdvancerTickSeconds < 1 || c.AdvancerTicks*c.AdvancerTickSeconds > 60 {
		errs = append(errs, errors.New("context vwr:advancerTickSeconds: ticks × seconds must be in [1, 60]"))
	}
	return errors.Join(errs...)
}
