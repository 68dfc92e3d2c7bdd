// SPNEGO (HTTP Negotiate) for a Kerberos-secured WebHDFS: a GSSAPI token for the name node's
// HTTP service principal, HTTP/<host>, from the user's ticket cache (after kinit) or from a keytab
// named in the config. GSSAPI is the optional npm package `kerberos` (a binding of the system's
// libgssapi_krb5), loaded only when a cluster needs it.

import { createRequire } from 'node:module';
import { promises as dns } from 'node:dns';
import { isIP } from 'node:net';
import { UsageError } from '../../errors.js';

export interface KerberosSettings {
  /** The client principal (user@REALM): required with a keytab, else the ticket cache's. */
  readonly principal?: string;
  /** A keytab to get tickets from, instead of the user's ticket cache. */
  readonly keytab?: string;
}

interface GssClient {
  step(challenge: string): Promise<string>;
}
interface KerberosModule {
  initializeClient(service: string, options: { principal?: string; mechOID?: number }): Promise<GssClient>;
  readonly GSS_MECH_OID_SPNEGO: number;
}

let loaded: KerberosModule | undefined;

/** The `kerberos` package, or a usage error saying how to get it. */
export function kerberosModule(): KerberosModule {
  if (loaded) return loaded;
  try {
    loaded = createRequire(import.meta.url)('kerberos') as KerberosModule;
    return loaded;
  } catch (e) {
    throw new UsageError({ reason: 'kerberos-package-missing', error: (e as Error).message.split('\n')[0]! });
  }
}

/** Messages of GSSAPI failures that mean the user has no usable ticket. */
const NO_TICKET =
  /No credentials|credentials cache|Ticket expired|expired|Credential cache is empty|No Kerberos credentials|cannot find mechanisms/i;

/**
 * GSSAPI takes a client keytab only from the process environment (MIT's KRB5_CLIENT_KTNAME; the
 * binding has no call for it): set here, with a ticket cache in memory so that the user's own
 * cache is neither read nor written.
 */
function useKeytab(keytab: string): void {
  if (process.env.KRB5_CLIENT_KTNAME === keytab) return;
  process.env.KRB5_CLIENT_KTNAME = keytab;
  process.env.KRB5CCNAME = `MEMORY:stagecommit-${process.pid}`;
}

export class Spnego {
  private readonly hosts = new Map<string, Promise<string>>();

  constructor(private readonly settings: KerberosSettings) {}

  /** `Negotiate <token>` for a request to `url`. */
  async authorization(url: string): Promise<string> {
    const k = kerberosModule();
    const host = await this.serviceHost(new URL(url).hostname);
    if (this.settings.keytab) useKeytab(this.settings.keytab);
    try {
      const client = await k.initializeClient(`HTTP@${host}`, {
        mechOID: k.GSS_MECH_OID_SPNEGO,
        ...(this.settings.principal ? { principal: this.settings.principal } : {}),
      });
      return `Negotiate ${await client.step('')}`;
    } catch (e) {
      const msg = (e as Error).message;
      if (/Server .* not found in Kerberos database/i.test(msg))
        throw new UsageError({
          reason: 'kerberos-no-service-principal',
          host,
          nameNode: new URL(url).host,
          error: msg,
        });
      if (NO_TICKET.test(msg)) {
        const who = this.settings.principal ?? 'USER@REALM';
        const keytab = this.settings.keytab ?? null;
        throw new UsageError({ reason: 'kerberos-no-ticket', host, keytab, principal: who, error: msg });
      }
      throw new UsageError({ reason: 'kerberos-failed', host, error: msg });
    }
  }

  /**
   * The host of the name node's service principal: the URL's host, an IP address turned into its
   * name (as Hadoop's client canonicalises it), since service principals name hosts.
   */
  private serviceHost(host: string): Promise<string> {
    const bare = host.replace(/^\[|\]$/g, '');
    let p = this.hosts.get(bare);
    if (!p) {
      p = isIP(bare)
        ? dns.reverse(bare).then(
            (names) => names[0] ?? bare,
            () => bare,
          )
        : Promise.resolve(bare.toLowerCase());
      this.hosts.set(bare, p);
    }
    return p;
  }
}
