// Signing in, when the server asks who this is (an identity mode is configured): the key
// or token is sent once, as a bearer, to POST /api/session, whose answer is an HttpOnly
// cookie that the page's later requests carry. The page never keeps the key itself.

const REFUSED = "That key or token was not accepted.";
const UNREACHABLE = "The server could not be reached. Check that it is running, then try again.";

/** Show the sign-in form in place of `layout`; a sign-in reloads the page. */
export function askToSignIn(layout) {
  const form = document.getElementById("sign-in");
  const secret = document.getElementById("sign-in-secret");
  const error = document.getElementById("sign-in-error");
  layout.hidden = true;
  form.hidden = false;
  secret.focus();
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    let response = null;
    try {
      response = await fetch("/api/session", {
        method: "POST",
        headers: { Accept: "application/json", Authorization: `Bearer ${secret.value.trim()}` },
      });
    } catch {
      // shown below as unreachable
    }
    if (response && response.ok) {
      window.location.reload();
      return;
    }
    secret.value = "";
    error.textContent = response ? REFUSED : UNREACHABLE;
    error.hidden = false;
  });
}
