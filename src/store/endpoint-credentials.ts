/**
 * Credentials for an emulator endpoint started in this process (the sandbox's s3rver), so
 * `openStore(url)` works in a drill without putting keys in the URL (argv) or in this
 * process's environment, where the real AWS chain — and a real profile — would pick them up.
 * Production endpoints are never registered: they use the SDK's standard chain.
 */
/** Static credentials for an emulator (the sandbox's s3rver); production uses the SDK chain. */
export interface S3Credentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
}

const registry = new Map<string, S3Credentials>();

export function registerEndpointCredentials(endpoint: string, credentials: S3Credentials): () => void {
  registry.set(endpoint, credentials);
  return () => {
    if (registry.get(endpoint) === credentials) registry.delete(endpoint);
  };
}

export function endpointCredentials(endpoint: string | undefined): S3Credentials | undefined {
  return endpoint === undefined ? undefined : registry.get(endpoint);
}
