// The SDK client, with what every request it sends must do here: be counted (protocol.md §9.3 counts
// requests, retries included), and, when it changes something, ask the job lease's fence before
// each try and be cut off if the fence trips before the answer (fence.ts).

import { S3Client, type ServiceInputTypes, type ServiceOutputTypes } from '@aws-sdk/client-s3';
import type { FinalizeRequestMiddleware } from '@smithy/types';
import { admitChange } from '../fence.js';
import type { S3Settings } from './settings.js';

export function fencedClient(settings: S3Settings, onRequest: () => void): S3Client {
  const client = new S3Client({ maxAttempts: 6, ...settings.client });
  // After signing, once per try: the request object it sees is the one the handler is given.
  const cuts = new WeakMap<object, AbortSignal>();
  const requests: FinalizeRequestMiddleware<ServiceInputTypes, ServiceOutputTypes> = (next) => async (args) => {
    onRequest();
    const { method } = args.request as { method?: string };
    const { Bucket, Key } = args.input as { Bucket?: string; Key?: string };
    const cut =
      method === 'GET' || method === 'HEAD'
        ? undefined
        : admitChange(Key === undefined ? `/${Bucket}` : `/${Bucket}/${Key}`);
    if (!cut) return next(args);
    cuts.set(args.request as object, cut);
    return next(args).catch((e: unknown) => {
      throw cut.aborted ? cut.reason : e;
    });
  };
  client.middlewareStack.addRelativeTo(requests, {
    name: 'stagecommitRequests',
    relation: 'after',
    toMiddleware: 'httpSigningMiddleware',
  });
  const handler = client.config.requestHandler as {
    handle(r: object, o?: { abortSignal?: AbortSignal }): Promise<unknown>;
  };
  const handle = handler.handle.bind(handler);
  handler.handle = (r, o) => {
    const cut = cuts.get(r);
    return handle(r, cut ? { ...o, abortSignal: cut } : o);
  };
  return client;
}
