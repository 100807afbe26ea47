-- The token-creation limit now counts a client by its network (an IPv6 /64, every loopback address
-- as one, an IPv4-mapped address as its IPv4 address): `client_ip` keys rows by that text. Rows
-- older than the 10-second interval limit nothing, and those keyed by a single IPv6 or loopback
-- address would never be read again: they go. A row of the last seconds stays for its interval.
delete from token_requests where last_at < now() - interval '1 minute';
