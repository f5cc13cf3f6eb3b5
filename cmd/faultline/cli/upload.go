package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/spf13/cobra"

	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/fleet/client"
	"github.com/faultline-dev/faultline/fleet/server"
)

func newUpload() *cobra.Command {
	var (
		serverURL, tokenFile, device, version, symbols string
		retries                                        int
	)
	cmd := &cobra.Command{
		Use:   "upload --server URL [--token-file FILE] [--device D] [--version V] [--symbols DIR] DUMP|ELF...",
		Short: "Upload firmware ELFs and crash dumps to a crash server (faultline serve)",
		Long: `upload sends each file to a crash server: an ELF (the file starts with the
ELF magic) as symbols, anything else as a dump, in any format analyze reads.
A native dump whose memory is in region files is sent self-contained (its
regions inline). --symbols DIR also uploads every ELF under DIR (CI: the
release's firmware). Connection errors and 5xx answers are retried with
exponential backoff; a refusal (the server says why) is not.

  faultline upload --server http://127.0.0.1:8080 --version 1.4.2 build/fw.elf
  faultline upload --server http://crash.example:8080 --token-file tok --device sn-1234 crash.bin

One line a file on stdout: "FILE: symbols BUILD-ID (sha256 HASH)" or
"FILE: dump ID STATUS". Exit status 1 when any file was not uploaded.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if serverURL == "" {
				return usagef("--server URL is required (the crash server, e.g. http://127.0.0.1:8080)")
			}
			if len(args) == 0 && symbols == "" {
				return usagef("give DUMP or ELF files, or --symbols DIR")
			}
			if retries < 0 || retries > 100 {
				return usagef("--retries %d: want 0..100", retries)
			}
			var token string
			if tokenFile != "" {
				t, err := client.ReadTokenFile(tokenFile)
				if err != nil {
					return usagef("--token-file %v", err)
				}
				token = t
			}
			c, err := client.New(serverURL, token)
			if err != nil {
				return usagef("--server %v", err)
			}
			c.Attempts = retries + 1
			stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
			files := args
			if symbols != "" {
				elfs, err := elfFilesUnder(symbols)
				if err != nil {
					return usagef("--symbols %v", err)
				}
				files = append(elfs, files...)
			}
			ctx := contextOf(cmd)
			failed := 0
			for _, p := range files {
				c.OnRetry = func(attempt int, err error, wait time.Duration) {
					fmt.Fprintf(stderr, "faultline: %s: try %d: %v; trying again in %v\n", p, attempt, err, wait)
				}
				line, err := uploadFile(ctx, c, p, device, version)
				if err != nil {
					failed++
					fmt.Fprintf(stderr, "faultline: %s: %v\n", p, err)
					continue
				}
				fmt.Fprintf(stdout, "%s: %s\n", p, line)
			}
			if failed > 0 {
				return silentError{ExitInput}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&serverURL, "server", "", "the crash server's URL, e.g. http://127.0.0.1:8080 (required)")
	f.StringVar(&tokenFile, "token-file", "", "a file holding the token (its first line that is not a # comment; a \"ROLES TOKEN\" line works too)")
	f.StringVar(&device, "device", "", "the device the dumps come from (X-Faultline-Device)")
	f.StringVar(&version, "version", "", "the firmware version of the dumps (X-Faultline-Version)")
	f.StringVar(&symbols, "symbols", "", "also upload every ELF file under this directory")
	f.IntVar(&retries, "retries", 5, "retries of a file after a connection error or a 5xx answer, with exponential backoff from 0.5 s")
	return cmd
}

// elfFilesUnder lists the ELF files under dir, in path order.
func elfFilesUnder(dir string) ([]string, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", dir, fsReasonOf(err))
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("%s: not a directory", dir)
	}
	var out []string
	err = filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() || !e.Type().IsRegular() && e.Type()&fs.ModeSymlink == 0 {
			return nil
		}
		if len(out) >= maxStoreELFs {
			return fmt.Errorf("%s: more than %d ELF files", dir, maxStoreELFs)
		}
		if hasELFMagic(p) {
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no ELF file in the directory", dir)
	}
	sort.Strings(out)
	return out, nil
}

// uploadFile sends one file and returns its line of output.
func uploadFile(ctx context.Context, c *client.Client, path, device, version string) (string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("%s", fsReasonOf(err))
	}
	if !st.Mode().IsRegular() {
		return "", errors.New("not a regular file")
	}
	limit := int64(server.DefaultMaxELF)
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("%s", fsReasonOf(err))
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	f.Close()
	if err != nil {
		return "", err
	}
	if int64(len(data)) > limit {
		return "", fmt.Errorf("more than %d bytes: too large to upload", limit)
	}
	name := filepath.Base(path)
	if bytes.HasPrefix(data, []byte("\x7fELF")) && !isELFCore(data) {
		y, err := c.UploadSymbol(ctx, data, name)
		if err != nil {
			return "", err
		}
		id := y.BuildID
		if id == "" {
			id = "(no build ID)"
		}
		return fmt.Sprintf("symbols %s (sha256 %s)", id, y.SHA256), nil
	}
	if _, perr := crashdump.Parse(data, path, nil); perr != nil {
		// A native manifest whose regions are files: send it with every
		// region inline.
		if fm, ok := crashdump.Detect(data); ok && fm.Name == crashdump.FormatNative {
			d, err := crashdump.Load(path)
			if err != nil {
				return "", err
			}
			var b bytes.Buffer
			err = d.WriteSelfContained(&b)
			d.Close()
			if err != nil {
				return "", err
			}
			data = b.Bytes()
		}
		// Anything else goes as it is: the server says what is wrong.
	}
	u, err := c.UploadDump(ctx, data, name, device, version)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("dump %s %s", u.ID, u.Status), nil
}

// isELFCore reports whether an ELF file is a core file (ET_CORE, a dump),
// not firmware.
func isELFCore(data []byte) bool {
	if len(data) < 18 {
		return false
	}
	// e_type at offset 16, in the file's byte order (EI_DATA at 5).
	t := uint16(data[16]) | uint16(data[17])<<8
	if data[5] == 2 {
		t = uint16(data[16])<<8 | uint16(data[17])
	}
	return t == 4
}
