package bboltstore

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"testing"
)

// shopifyOrders returns the 300 synthetic Shopify orders/create bodies of
// testdata/shopify-orders.jsonl.gz (a copy of the shared test data: median
// 2.7 KB, every value made up).
func shopifyOrders(tb testing.TB) [][]byte {
	tb.Helper()
	f, err := os.Open(filepath.Join("testdata", "shopify-orders.jsonl.gz"))
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		tb.Fatal(err)
	}
	var orders [][]byte
	sc := bufio.NewScanner(zr)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		orders = append(orders, bytes.Clone(sc.Bytes()))
	}
	if err := sc.Err(); err != nil || len(orders) == 0 {
		tb.Fatalf("read orders: %d, %v", len(orders), err)
	}
	return orders
}
