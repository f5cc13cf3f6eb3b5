package analysis

import (
	"github.com/faultline-dev/faultline/analysis/report"
	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/crashdump/fault"
	"github.com/faultline-dev/faultline/elfsym"
	"github.com/faultline-dev/faultline/unwinders"
)

// More than one image per dump (elfsym.Images: a bootloader and its
// application, a TrustZone Secure and Non-secure image, a ROM's symbol
// file). The primary image (the first --elf) is the one the analysis is
// made with; every frame is unwound with the tables of the image that
// claims its PC (the Target's Program is the Images) and symbolized with
// that image (elfsym.File.ImageAt), and the pairing is checked per image.

// imageLabel is the name frames[].image gives the image that holds addr:
// "" when elf is used alone.
func imageLabel(elf *elfsym.File, addr uint32) string {
	if elf == nil || elf.Images() == nil {
		return ""
	}
	set := elf.Images()
	if i, ok := set.Index(addr); ok {
		return set.Label(i)
	}
	return ""
}

// imageFacts returns the facts of every image of elf's set, the primary's
// (facts) first; nil when elf is used alone.
func imageFacts(elf *elfsym.File, facts elfFacts) []elfFacts {
	set := elf.Images()
	if set == nil {
		return nil
	}
	out := []elfFacts{facts}
	for _, f := range set.Files()[1:] {
		out = append(out, factsOf(f)) // not the set's first: no recursion
	}
	return out
}

// pairImages checks the pairing: of elf alone, or of every image of its
// set with the frames whose code it holds (the frames of other images
// stand as gaps, so no call is checked across images). The verdict of a
// set is a mismatch when any image's is, verified when every image's is,
// else unverified; its evidence is each image's, named.
func pairImages(elf *elfsym.File, facts elfFacts, d *crashdump.Dump, t *unwinders.Target, frames []unwinders.Frame, scb fault.SCB) (report.Pairing, []report.ImageJSON) {
	if elf.Images() == nil {
		return checkPairing(elf, facts, d, t, frames, scb), nil
	}
	set := elf.Images()
	all := facts.images
	if len(all) != len(set.Files()) {
		all = imageFacts(elf, facts)
	}
	sum := report.Pairing{Verdict: report.PairVerified, Evidence: []string{}}
	var out []report.ImageJSON
	for i, f := range set.Files() {
		own := make([]unwinders.Frame, 0, len(frames))
		for _, fr := range frames {
			if fr.Kind == unwinders.KindNormal {
				if j, ok := set.Index(fr.LookupPC()); !ok || j != i {
					if n := len(own); n == 0 || own[n-1].Kind != unwinders.KindGap {
						own = append(own, unwinders.Frame{SP: fr.SP, Kind: unwinders.KindGap})
					}
					continue
				}
			}
			own = append(own, fr)
		}
		p := checkPairing(f, all[i], d, t, own, scb)
		name := set.Label(i)
		for _, e := range p.Evidence {
			sum.Evidence = append(sum.Evidence, name+": "+e)
		}
		for _, e := range p.Differences {
			sum.Differences = append(sum.Differences, name+": "+e)
		}
		for _, e := range p.Doubts {
			sum.Doubts = append(sum.Doubts, name+": "+e)
		}
		switch {
		case p.Verdict == report.PairMismatch:
			sum.Verdict = report.PairMismatch
		case p.Verdict == report.PairUnverified && sum.Verdict == report.PairVerified:
			sum.Verdict = report.PairUnverified
		}
		out = append(out, report.ImageJSON{Path: f.Name(), BuildID: all[i].buildID, CPU: all[i].cpu, Pairing: &p})
	}
	return sum, out
}

// imagesLayer puts every image's flash under the dump and makes the
// Target's Program the set; false when elf is used alone.
func imagesLayer(elf *elfsym.File, im *unwinders.Image, t *unwinders.Target) (bool, error) {
	set := elf.Images()
	if set == nil {
		return false, nil
	}
	if err := im.AddLayer(set.Segments()...); err != nil {
		return true, err
	}
	t.Prog = set
	return true, nil
}

// imageWarnings are the warnings of every image of elf's set.
func imageWarnings(elf *elfsym.File) []string {
	var out []string
	for _, f := range elf.Images().Files() {
		out = append(out, f.Warnings()...)
	}
	return out
}

// bankedStacks bounds the stacks of a core with the Security Extension:
// the dump's memory regions that hold MSP_S, PSP_S, MSP_NS and PSP_NS.
func bankedStacks(d *crashdump.Dump, t *unwinders.Target) {
	for _, reg := range []unwinders.Reg{unwinders.MSPS, unwinders.PSPS, unwinders.MSPNS, unwinders.PSPNS} {
		v, ok := d.Regs.Get(reg)
		if !ok || v == 0 {
			continue
		}
		for _, r := range d.Memory {
			if r.Contains(v) || (len(r.Data) > 0 && uint64(v) == r.End()) {
				t.BankedStacks = append(t.BankedStacks, unwinders.Range{Lo: r.Addr, Hi: uint32(min(r.End(), 1<<32-1))})
				break
			}
		}
	}
}
