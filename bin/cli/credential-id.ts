/**
 * The `check` of a flag naming a credential by its id: the 16 characters a-z, 2-7 after
 * the credential's prefix (`psk_<key_id>_…`, `psmc_<client_id>_…`). A value carrying the
 * prefix is refused without echoing it: it may be a whole credential pasted by mistake.
 */
export function credentialIdCheck(c: { flag: string; id: string; prefix: string; whole: string }) {
  return (v: string): string | undefined =>
    v.startsWith(c.prefix)
      ? `--${c.flag} takes the ${c.id} (the 16 characters after "${c.prefix}"), not the whole ${c.whole}`
      : /^[a-z2-7]{16}$/.test(v)
        ? undefined
        : `--${c.flag} must be a ${c.id}: 16 characters a-z and 2-7, as printed by \`psync ${c.flag} issue\``;
}
