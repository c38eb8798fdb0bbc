package compose

// Slot helpers for faults that move slots or masters: key → slot hashing,
// the MIGRATING/IMPORTING marks each node keeps about itself, and waiting
// until every node agrees on a slot's owner.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// crc16tab is CRC16-CCITT (XMODEM), the checksum Redis Cluster hashes keys with.
var crc16tab = func() (t [256]uint16) {
	for i := range t {
		crc := uint16(i) << 8
		for j := 0; j < 8; j++ {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
		t[i] = crc
	}
	return t
}()

func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc = crc<<8 ^ crc16tab[byte(crc>>8)^s[i]]
	}
	return crc
}

// KeySlot is the hash slot of key, computed as Redis Cluster does (the hash
// tag between the first "{" and the next "}" if non-empty, else the whole key).
func KeySlot(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	return int(crc16(key)) % NumSlots
}

// KeyInSlot returns a key "<prefix>{<tag>}" that hashes to slot. prefix must
// not contain "{". The same (prefix, slot) always yields the same key.
func KeyInSlot(prefix string, slot int) (string, error) {
	if slot < 0 || slot >= NumSlots {
		return "", fmt.Errorf("compose: slot %d out of range [0,%d)", slot, NumSlots)
	}
	if strings.Contains(prefix, "{") {
		return "", fmt.Errorf("compose: key prefix %q must not contain '{'", prefix)
	}
	for i := 0; i < 1<<22; i++ {
		tag := strconv.Itoa(i)
		if int(crc16(tag))%NumSlots == slot {
			return prefix + "{" + tag + "}", nil
		}
	}
	return "", fmt.Errorf("compose: no tag found for slot %d", slot) // unreachable: CRC16 covers every slot
}

// OpenSlot is a slot that a node has marked as being migrated away
// (CLUSTER SETSLOT … MIGRATING) or imported (… IMPORTING).
type OpenSlot struct {
	Slot   int
	Addr   string // the node holding the mark
	NodeID string
	State  string // "migrating" or "importing"
	Peer   string // node id of the destination (migrating) or the source (importing)
}

func (o OpenSlot) String() string {
	arrow := "->"
	if o.State == "importing" {
		arrow = "<-"
	}
	return fmt.Sprintf("%s:[%d%s%s]", o.Addr, o.Slot, arrow, o.Peer)
}

// parseOpenSlots reads the "[slot->-id]" / "[slot-<-id]" marks of the myself
// line of a CLUSTER NODES reply (Redis only shows them for the node itself).
func parseOpenSlots(nodes, addr string) ([]OpenSlot, error) {
	var out []OpenSlot
	for _, line := range strings.Split(nodes, "\n") {
		f := strings.Fields(line)
		if len(f) < 8 || !strings.Contains(","+f[2]+",", ",myself,") {
			continue
		}
		for _, tok := range f[8:] {
			if !strings.HasPrefix(tok, "[") || !strings.HasSuffix(tok, "]") {
				continue
			}
			body := tok[1 : len(tok)-1]
			st, sep := "migrating", "->-"
			if strings.Contains(body, "-<-") {
				st, sep = "importing", "-<-"
			}
			sl, peer, ok := strings.Cut(body, sep)
			n, err := strconv.Atoi(sl)
			if !ok || err != nil {
				return nil, fmt.Errorf("compose: bad open-slot mark %q on %s", tok, addr)
			}
			out = append(out, OpenSlot{Slot: n, Addr: addr, NodeID: f[0], State: st, Peer: peer})
		}
	}
	return out, nil
}

// runningClients returns the admin clients of every running, unpaused node.
func (c *LocalCluster) runningClients() (map[string]*redis.Client, error) {
	c.mu.Lock()
	closed := c.closed
	procs := append([]*proc(nil), c.procs...)
	c.mu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	out := map[string]*redis.Client{}
	for _, p := range procs {
		if cl := c.client(p); cl != nil {
			out[p.addr] = cl
		}
	}
	return out, nil
}

// OpenSlots lists the MIGRATING/IMPORTING marks of every running, unpaused
// node, ordered by address then slot. A node that does not answer is an
// error (its marks would be unknown).
func (c *LocalCluster) OpenSlots(ctx context.Context) ([]OpenSlot, error) {
	clients, err := c.runningClients()
	if err != nil {
		return nil, err
	}
	var out []OpenSlot
	for addr, cl := range clients {
		s, err := call(ctx, cl, func(ctx context.Context, cl *redis.Client) (string, error) {
			return cl.ClusterNodes(ctx).Result()
		})
		if err != nil {
			return nil, fmt.Errorf("compose: CLUSTER NODES on %s: %w", addr, err)
		}
		marks, err := parseOpenSlots(s, addr)
		if err != nil {
			return nil, err
		}
		out = append(out, marks...)
	}
	slices.SortFunc(out, func(a, b OpenSlot) int {
		if d := strings.Compare(a.Addr, b.Addr); d != 0 {
			return d
		}
		return a.Slot - b.Slot
	})
	return out, nil
}

// SlotOwners returns, for every running, unpaused node, the id of the master
// that node believes owns slot ("" if it knows none). Nodes that do not
// answer are left out; the error joins their errors and is non-nil only if
// no node answered.
func (c *LocalCluster) SlotOwners(ctx context.Context, slot int) (map[string]string, error) {
	clients, err := c.runningClients()
	if err != nil {
		return nil, err
	}
	return slotOwnersFrom(ctx, clients, slot, "no node is running (and not paused)")
}

// slotOwnersFrom asks every client (by node address) for its CLUSTER NODES
// view and returns, per node, the id it names as the owner of slot ("" if
// none). Nodes that do not answer are left out; the error is non-nil only
// if none answered (none says why when there was nobody to ask).
func slotOwnersFrom(ctx context.Context, clients map[string]*redis.Client, slot int, none string) (map[string]string, error) {
	out := map[string]string{}
	var errs []error
	for addr, cl := range clients {
		view, err := clusterNodesOf(ctx, cl, addr)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", addr, err))
			continue
		}
		owner := ""
		for _, e := range view {
			if e.role != "master" {
				continue
			}
			for _, r := range e.slots {
				if slot >= r[0] && slot <= r[1] {
					owner = e.id
				}
			}
		}
		out[addr] = owner
	}
	if len(out) == 0 {
		if len(errs) == 0 {
			return nil, errors.New("compose: " + none)
		}
		return nil, fmt.Errorf("compose: no node answered CLUSTER NODES: %w", errors.Join(errs...))
	}
	return out, nil
}

// WaitSlotOwner polls (every 20ms) until every running, unpaused node names
// ownerID as the owner of slot. Without a deadline on ctx it waits at most
// Options.ReadyTimeout.
func (c *LocalCluster) WaitSlotOwner(ctx context.Context, slot int, ownerID string) error {
	return waitSlotOwner(ctx, c.opt.ReadyTimeout, slot, ownerID, c.SlotOwners)
}

// NodeByID returns the node with the given cluster id in the current view.
func (c *LocalCluster) NodeByID(ctx context.Context, id string) (Node, error) {
	nodes, err := c.Nodes(ctx)
	if err != nil {
		return Node{}, err
	}
	for _, n := range nodes {
		if n.ID == id {
			return n, nil
		}
	}
	return Node{}, fmt.Errorf("compose: no node with id %s", id)
}

func shortID(id string) string {
	if id == "" {
		return "(none)"
	}
	if len(id) > 8 {
		return id[:8]
	}
	return id
}
