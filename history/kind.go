package history

import "strconv"

// Kind is the kind of one operation.
type Kind uint8

// Operation kinds.
const (
	KindFresh          Kind = iota // a new user's first request
	KindReplay                     // an earlier request re-sent with the same ids
	KindSameUser                   // an earlier user with a new request_id
	KindForeignRequest             // another user reusing an earlier request_id
	KindRelease                    // fence an earlier reservation (RELEASE_PENDING) and compensate it
	KindReturn                     // the user of an earlier release back, with a new request_id
	KindQuery                      // what became of an earlier request, asked without re-sending it
)

var kindNames = [...]string{"fresh", "replay", "same_user", "foreign_request", "release", "return", "query"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "kind" + strconv.Itoa(int(k))
}

// IsReserve reports whether the operation calls reserve.lua.
func (k Kind) IsReserve() bool { return k != KindRelease && k != KindQuery }
