import { h } from '../element.ts';
import { hostedSignIn, startHostedSignIn } from '../hosted-sign-in.ts';

/**
 * Sign-in: with the stack's own user pool, a button to its hosted sign-in page; always, a field to paste a user
 * token (JWT), as local use and an identity provider of your own need.
 */
export function signInForm(onToken: (token: string) => void, message?: string) {
  const hosted = hostedSignIn();
  const token = h('textarea', {
    name: 'token',
    id: 'token',
    rows: 4,
    required: true,
    autocomplete: 'off',
    spellcheck: 'false',
    'aria-describedby': 'token-hint',
  });
  return h(
    'section',
    { class: 'sign-in', 'aria-labelledby': 'sign-in-title' },
    h('h2', { id: 'sign-in-title' }, 'Sign in'),
    message ? h('p', { class: 'notice notice-error', role: 'alert' }, message) : null,
    hosted
      ? h(
          'p',
          {},
          h(
            'button',
            { type: 'button', class: 'primary-button', onclick: () => void startHostedSignIn(hosted) },
            'Sign in with your account',
          ),
        )
      : null,
    h(
      'form',
      {
        onsubmit: (event) => {
          event.preventDefault();
          const value = token.value.trim().replace(/^Bearer\s+/i, '');
          if (value) onToken(value);
        },
      },
      h('label', { for: 'token', class: 'label' }, 'Access token'),
      token,
      h(
        'p',
        { id: 'token-hint', class: 'hint' },
        'A user token (JWT) from your identity provider. ',
        h('code', {}, 'npm start'),
        ' prints demo tokens and a link that signs you in. The token stays in this browser tab only.',
      ),
      h('button', { type: 'submit', class: 'primary-button' }, 'Sign in'),
    ),
  );
}
