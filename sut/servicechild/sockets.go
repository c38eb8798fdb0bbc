package servicechild

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Conn is one established TCP connection of the service's processes.
type Conn struct {
	Local, Remote string // "127.0.0.1:port"
}

// Conns lists the established TCP (IPv4) connections whose sockets the
// service's processes hold: every process of the child's process group,
// read from /proc (Linux). Nil when the child is not running.
func (c *Child) Conns() ([]Conn, error) {
	pgid := c.PGID()
	if pgid == 0 {
		return nil, nil
	}
	inodes, err := groupSocketInodes(pgid)
	if err != nil {
		return nil, err
	}
	if len(inodes) == 0 {
		return nil, nil
	}
	return establishedConns(inodes)
}

// groupSocketInodes returns the socket inodes held by the processes of
// process group pgid.
func groupSocketInodes(pgid int) (map[string]bool, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("service child: reading /proc: %w", err)
	}
	inodes := map[string]bool{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || processGroup(pid) != pgid {
			continue
		}
		fds, _ := os.ReadDir(filepath.Join("/proc", e.Name(), "fd"))
		for _, fd := range fds {
			l, err := os.Readlink(filepath.Join("/proc", e.Name(), "fd", fd.Name()))
			if err == nil && strings.HasPrefix(l, "socket:[") {
				inodes[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
			}
		}
	}
	return inodes, nil
}

// processGroup is pid's process group (0 if it cannot be read).
func processGroup(pid int) int {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')') // comm may hold spaces
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:]) // state ppid pgrp ...
	if len(f) < 3 {
		return 0
	}
	g, _ := strconv.Atoi(f[2])
	return g
}

// establishedConns reads /proc/net/tcp for the established connections of
// the given socket inodes.
func establishedConns(inodes map[string]bool) ([]Conn, error) {
	f, err := os.Open("/proc/net/tcp")
	if err != nil {
		return nil, fmt.Errorf("service child: reading /proc/net/tcp: %w", err)
	}
	defer f.Close()
	var out []Conn
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	for sc.Scan() {
		fl := strings.Fields(sc.Text())
		// sl local rem st tx:rx tr:when retrnsmt uid timeout inode
		if len(fl) < 10 || fl[3] != "01" || !inodes[fl[9]] {
			continue
		}
		out = append(out, Conn{Local: hexAddr(fl[1]), Remote: hexAddr(fl[2])})
	}
	return out, sc.Err()
}

// hexAddr decodes /proc/net/tcp's "0100007F:1F90" into "127.0.0.1:8080".
func hexAddr(s string) string {
	ip, port, ok := strings.Cut(s, ":")
	b, err := hex.DecodeString(ip)
	p, perr := strconv.ParseUint(port, 16, 16)
	if !ok || err != nil || perr != nil || len(b) != 4 {
		return s
	}
	return net.JoinHostPort(net.IPv4(b[3], b[2], b[1], b[0]).String(), strconv.FormatUint(p, 10))
}
