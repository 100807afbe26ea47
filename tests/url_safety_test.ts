// Configuration-time webhook URL check: every spelling of a non-public destination is refused.

import assert from "node:assert/strict";
import { checkWebhookUrl, isPublicAddress } from "../src/webhooks/url_safety.ts";

const NON_PUBLIC_URLS = [
  // loopback in every spelling WHATWG URL normalizes to 127.0.0.1
  "https://127.0.0.1/hook",
  "https://2130706433/hook",
  "https://0x7f000001/hook",
  "https://0177.0.0.1/hook",
  "https://127.1/hook",
  "https://127.0.0.1./hook",
  "https://%31%32%37.0.0.1/hook",
  "https://[::1]/hook",
  "https://[::ffff:127.0.0.1]/hook",
  "https://[::ffff:7f00:1]/hook",
  "https://[::127.0.0.1]/hook",
  "https://[::7f00:1]/hook",
  // private, shared, unspecified
  "https://10.0.0.1/",
  "https://172.16.0.1/",
  "https://172.31.255.254/",
  "https://192.168.1.1/",
  "https://100.64.0.1/",
  "https://0.0.0.0/",
  "https://0/",
  "https://[::]/",
  "https://[::ffff:10.0.0.1]/",
  "https://[::ffff:192.168.0.1]:8443/x",
  // link-local, metadata, unique-local
  "https://169.254.169.254/latest/meta-data/",
  "https://[fd00:ec2::254]/",
  "https://[fd00::1]/",
  "https://[fe80::1]/",
  // multicast, broadcast, reserved, documentation, translation prefixes
  "https://224.0.0.1/",
  "https://239.255.255.250/",
  "https://[ff02::1]/",
  "https://255.255.255.255/",
  "https://240.0.0.1/",
  "https://192.0.2.1/",
  "https://198.51.100.7/",
  "https://203.0.113.5/",
  "https://198.18.0.1/",
  "https://[2001:db8::1]/",
  "https://[64:ff9b::7f00:1]/",
  "https://[2002:7f00:1::]/",
  "https://[2001::1]/",
];

Deno.test("every spelling of a non-public address is refused", () => {
  for (const url of NON_PUBLIC_URLS) {
    const error = checkWebhookUrl(url);
    assert.ok(error !== null, `${url} was accepted`);
    assert.match(error, /^Invalid url: host ".+" is not a public address$/, url);
  }
});

Deno.test("the error quotes the normalized host", () => {
  assert.equal(
    checkWebhookUrl("https://2130706433/"),
    'Invalid url: host "127.0.0.1" is not a public address',
  );
  assert.equal(
    checkWebhookUrl("https://[::ffff:127.0.0.1]/"),
    'Invalid url: host "[::ffff:7f00:1]" is not a public address',
  );
});

Deno.test("localhost names are refused in any case, with or without a trailing dot", () => {
  for (const host of ["localhost", "LOCALHOST", "localhost.", "api.localhost", "A.B.LocalHost."]) {
    const error = checkWebhookUrl(`https://${host}:8443/hook`);
    assert.match(error ?? "", /^Invalid url: host ".+" is not a public name$/, host);
  }
  assert.equal(checkWebhookUrl("https://localhost.example.com/"), null);
  assert.equal(checkWebhookUrl("https://mylocalhost/"), null);
});

Deno.test("public names and public addresses are accepted", () => {
  for (
    const url of [
      "https://example.com/hook",
      "https://hooks.slack.com/services/T0/B0/xyz?x=1#frag",
      "https://EXAMPLE.com:8443/path",
      "https://bücher.example/hook",
      "https://8.8.8.8/hook",
      "https://[2606:4700:4700::1111]/hook",
      "https://[::ffff:8.8.8.8]/hook",
      "https://134744072/hook",
    ]
  ) {
    assert.equal(checkWebhookUrl(url), null, url);
  }
});

Deno.test("http is refused unless private webhooks are allowed", () => {
  assert.equal(checkWebhookUrl("http://example.com/hook"), "Invalid url: must use https");
  assert.equal(checkWebhookUrl("http://example.com/hook", { allowPrivate: true }), null);
  assert.equal(checkWebhookUrl("ftp://example.com/hook"), "Invalid url: must use https");
  assert.equal(
    checkWebhookUrl("ftp://example.com/", { allowPrivate: true }),
    "Invalid url: must use http or https",
  );
  assert.equal(checkWebhookUrl("javascript:alert(1)"), "Invalid url: must use https");
  assert.equal(checkWebhookUrl("file:///etc/passwd"), "Invalid url: must use https");
});

Deno.test("allowPrivate allows loopback and private hosts", () => {
  for (
    const url of ["http://127.0.0.1:8080/", "http://localhost:3000/x", "https://[::1]/", "http://10.1.2.3/"]
  ) {
    assert.equal(checkWebhookUrl(url, { allowPrivate: true }), null, url);
  }
});

Deno.test("user info is refused", () => {
  const refused = "Invalid url: must not contain a user name or password";
  assert.equal(checkWebhookUrl("https://user:secret@example.com/"), refused);
  assert.equal(checkWebhookUrl("https://user@example.com/"), refused);
  assert.equal(checkWebhookUrl("https://:secret@example.com/"), refused);
  assert.equal(checkWebhookUrl("http://user:pw@127.0.0.1/", { allowPrivate: true }), refused);
});

Deno.test("garbage is refused", () => {
  for (
    const raw of [
      "",
      "example.com",
      "/hook",
      "//example.com/hook",
      "https://",
      "https://[::1/",
      "https://999.1.1.1/",
    ]
  ) {
    assert.equal(checkWebhookUrl(raw), "Invalid url: not an absolute URL", JSON.stringify(raw));
  }
  for (
    const raw of [
      " https://example.com/",
      "https://exa\nmple.com/",
      "https://example.com/\t",
      "https://a b.com/",
    ]
  ) {
    assert.equal(
      checkWebhookUrl(raw),
      "Invalid url: must not contain spaces or control characters",
      JSON.stringify(raw),
    );
  }
  assert.equal(
    checkWebhookUrl(`https://example.com/${"a".repeat(2100)}`),
    "Invalid url: must be at most 2048 characters",
  );
});

Deno.test("isPublicAddress un-maps IPv4-mapped IPv6 and allows only unicast", () => {
  for (
    const ip of ["8.8.8.8", "1.1.1.1", "2606:4700:4700::1111", "::ffff:8.8.8.8", "[2606:4700:4700::1111]"]
  ) {
    assert.equal(isPublicAddress(ip), true, ip);
  }
  for (
    const ip of [
      "127.0.0.1",
      "::1",
      "::ffff:127.0.0.1",
      "::ffff:7f00:1",
      "::127.0.0.1",
      "::8.8.8.8",
      "10.0.0.1",
      "172.16.5.4",
      "192.168.0.1",
      "100.64.0.1",
      "169.254.169.254",
      "fd00:ec2::254",
      "fe80::1",
      "fe80::1%eth0",
      "0.0.0.0",
      "::",
      "255.255.255.255",
      "224.0.0.251",
      "ff02::1",
      "not an ip",
      "",
      "127.1",
      "2130706433",
    ]
  ) {
    assert.equal(isPublicAddress(ip), false, ip);
  }
});
