/*
Copyright The shardgate Authors.
*/

package gatewayapi

// granted says whether a ReferenceGrant in toNS lets objects of fromGroup/
// fromKind in fromNS refer to toGroup/toKind toName. References within one
// namespace need no grant; callers check that first.
func (idx *Index) granted(fromGroup, fromKind, fromNS, toGroup, toKind, toNS, toName string) bool {
	for _, g := range idx.grants[toNS] {
		fromOK := false
		for _, f := range g.Spec.From {
			if string(f.Group) == fromGroup && string(f.Kind) == fromKind && string(f.Namespace) == fromNS {
				fromOK = true
				break
			}
		}
		if !fromOK {
			continue
		}
		for _, t := range g.Spec.To {
			if string(t.Group) != toGroup || string(t.Kind) != toKind {
				continue
			}
			if t.Name == nil || *t.Name == "" || string(*t.Name) == toName {
				return true
			}
		}
	}
	return false
}
