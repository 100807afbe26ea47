// The service instances of `deno task cluster`: separate processes on one database, each with its
// own HTTP and SMTP port, run with the systemd unit's command line and the deployment's environment
// file (src/deploy/), the database and ports of this run put in.
import { generateMasterKeyText } from "../../secrets/master_key.ts";
import { type ServiceProcess, serviceProcess } from "../chaos/service_process.ts";
import { freePort } from "../bench/system.ts";
import { instanceEnvironment, serviceCommand } from "./deploy_files.ts";

export interface Instance {
  name: string;
  httpPort: number;
  smtpPort: number;
  /** Its /metrics listener (METRICS_PORT), which the task's Prometheus scrapes. */
  metricsPort: number;
  process: ServiceProcess;
}

export interface InstanceOptions {
  databaseUrl: string;
  /** Where clients reach the instances (the balancer): the base of the links they hand out. */
  publicUrl: string;
  /** The receiver's certificate, trusted for webhook calls. */
  trustedCertificate: string;
  paymentSecret: string;
}

/** Every instance of the run shares one master key, as a deployment's would (one secret). */
export const CLUSTER_MASTER_KEY = generateMasterKeyText();

export async function startInstances(count: number, options: InstanceOptions): Promise<Instance[]> {
  const { args } = await serviceCommand();
  const deployed = await instanceEnvironment();
  const instances = Array.from({ length: count }, (_, i) => {
    const httpPort = freePort();
    const smtpPort = freePort();
    const metricsPort = freePort();
    const env = {
      ...Deno.env.toObject(),
      ...deployed,
      DATABASE_URL: options.databaseUrl,
      MASTER_KEY: CLUSTER_MASTER_KEY,
      PUBLIC_URL: options.publicUrl,
      SMTP_PORT: String(smtpPort),
      LOG_REQUESTS: "0",
      // The receiver is on 127.0.0.1, with a certificate of its own.
      UNSAFE_ALLOW_PRIVATE_WEBHOOKS: "1",
      NODE_EXTRA_CA_CERTS: options.trustedCertificate,
      PAYMENT_WEBHOOK_SECRET: options.paymentSecret,
      METRICS_PORT: String(metricsPort),
    };
    return {
      name: `app${i + 1}`,
      httpPort,
      smtpPort,
      metricsPort,
      process: serviceProcess(httpPort, env, args),
    };
  });
  // One first, so that the migrations run once; then the others side by side.
  await instances[0].process.start();
  await Promise.all(instances.slice(1).map((instance) => instance.process.start()));
  return instances;
}
