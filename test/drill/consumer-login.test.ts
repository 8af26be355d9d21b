import { describe, expect, it } from 'vitest';
import { consumerLoginOf } from '../../src/app/drill/consumer-login.js';
import { formatConsumerConninfo } from '../../src/mesh/alternating.js';
import { Secret } from '../../src/mesh/secret.js';

describe('the login a drill consumer file gives', () => {
  it("a single pair's bare secret is the role's password, its provider file the role's", () => {
    const got = consumerLoginOf('web1_app', Secret.fromText('s3cr3t'));
    expect({ ...got, password: got.password.reveal() }).toEqual({
      login: 'web1_app',
      password: 's3cr3t',
      providerFile: 'web1_app',
      alternating: false,
    });
  });

  it("an alternating pair's keyword/value file names the login; its provider file is the login's", () => {
    const got = consumerLoginOf('web2_app', Secret.fromText(formatConsumerConninfo('web2_app_b', "it's\\x")));
    expect({ ...got, password: got.password.reveal() }).toEqual({
      login: 'web2_app_b',
      password: "it's\\x",
      providerFile: 'web2_app+b',
      alternating: true,
    });
  });

  it("a keyword/value file naming a login of another role is not taken for this pair's", () => {
    const got = consumerLoginOf('web2_app', Secret.fromText(formatConsumerConninfo('web1_app_a', 'x')));
    expect(got.alternating).toBe(false);
    expect(got.login).toBe('web2_app');
  });
});
