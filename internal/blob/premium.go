package blob

import (
	"strings"

	"github.com/tabula-dev/tabula/internal/azerr"
)

// Premium accounts (Azure's premium performance tier, chosen when an account is made; here
// Service.Premium) keep page blobs in disk tiers, P4 to P80, each up to a size: a page blob
// is in the smallest tier its size fits (AccessTierInferred) until Set Blob Tier, or Put Blob
// with x-ms-access-tier, names one at least that large (409
// BlobTierInadequateForContentLength for a smaller one). Block blobs keep their own tiers.

// pageTiers are the premium page blob tiers and the largest size each holds, in GiB.
var pageTiers = []struct {
	name string
	gib  int64
}{
	{"P4", 32}, {"P6", 64}, {"P10", 128}, {"P15", 256}, {"P20", 512}, {"P30", 1024},
	{"P40", 2048}, {"P50", 4096}, {"P60", 8192}, {"P70", 16384}, {"P80", 32767},
}

// premium reports whether account is a premium account.
func (s *Service) premium(account string) bool {
	return s.Premium != nil && s.Premium(account)
}

// SKU is the account's SKU as Get Account Information reports it.
func (s *Service) SKU(account string) string {
	if s.premium(account) {
		return "Premium_LRS"
	}
	return "Standard_RAGRS"
}

// pageTier reads a premium page blob tier, in any case: its canonical name and size.
func pageTier(name string) (string, int64, bool) {
	for _, t := range pageTiers {
		if strings.EqualFold(t.name, name) {
			return t.name, t.gib << 30, true
		}
	}
	return "", 0, false
}

// inferredPageTier is the smallest tier a page blob of size bytes fits, P10 at the least: a
// 1 KiB page blob reports P10 on Azure (the Python SDK's recorded test_blob_tier_set_tier_api),
// though Set Blob Tier takes P4 and P6.
func inferredPageTier(size int64) string {
	for _, t := range pageTiers[2:] {
		if size <= t.gib<<30 {
			return t.name
		}
	}
	return pageTiers[len(pageTiers)-1].name
}

// checkPageTier refuses a tier too small for a page blob of size bytes.
func checkPageTier(tier string, size int64) error {
	if _, limit, _ := pageTier(tier); size > limit {
		return azerr.Newf(azerr.BlobTierInadequateForContentLength, "The specified blob tier size limit cannot be less than content length: %s holds up to %d bytes, the blob has %d.", tier, limit, size)
	}
	return nil
}

// inferTier gives a page blob of a premium account the tier its size infers when none was
// set, as the real service reports it.
func inferTier(out *Blob) {
	if out.Type == PageBlob && out.AccessTier == "" {
		out.AccessTier, out.AccessTierInferred = inferredPageTier(out.Size), true
	}
}
