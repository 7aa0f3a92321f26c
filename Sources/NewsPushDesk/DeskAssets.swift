import Crypto
import Foundation

/// The page's style and script, served by the desk itself (no CDN: the desk works offline).
/// The style is inline, allowed by its hash in the Content-Security-Policy; the one script is a
/// file of the desk's own, as the policy allows no inline script.
enum DeskAssets {
    static let style = """
        :root{--ink:#1d2430;--muted:#5b6675;--line:#d9dee5;--bg:#f5f6f8;--card:#fff;--accent:#0b57d0;\
        --warn:#b3261e;--ok:#1e7b34;--held:#8a5a00}
        *{box-sizing:border-box}
        body{margin:0;font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--ink);\
        background:var(--bg)}
        header{display:flex;flex-wrap:wrap;align-items:center;gap:.5rem 1rem;padding:.6rem 1rem;\
        background:#101826;color:#fff}
        header strong{font-size:1.05rem;margin-right:.5rem}
        header nav{display:flex;flex-wrap:wrap;gap:.25rem}
        header nav a{color:#cfd8e3;text-decoration:none;padding:.3rem .6rem;border-radius:.4rem}
        header nav a.on{background:#2b3a52;color:#fff}
        header .who{margin-left:auto;display:flex;gap:.5rem;align-items:center;color:#cfd8e3}
        main{max-width:72rem;margin:0 auto;padding:1rem}
        h1{font-size:1.35rem;margin:.2rem 0 1rem}
        h2{font-size:1.1rem;margin:.3rem 0}
        .flash{padding:.6rem .8rem;border-radius:.4rem;margin-bottom:1rem;background:#e8f0fe;border:1px solid #aac4f5}
        .flash.bad{background:#fdecea;border-color:#f2b8b5}
        .card{background:var(--card);border:1px solid var(--line);border-radius:.6rem;padding:.8rem 1rem;\
        margin-bottom:1rem}
        .card.stale{opacity:.7;border-color:var(--warn)}
        .meta{color:var(--muted);font-size:.88rem;display:flex;flex-wrap:wrap;gap:.2rem .8rem}
        .cat{font-weight:600;color:var(--accent)}
        .fresh{color:var(--ok);font-weight:600}.gone{color:var(--warn);font-weight:600}
        .alert{font-size:1.02rem;margin:.3rem 0}
        .also{font-size:.88rem;color:var(--muted)}
        form.inline{display:inline}
        .decide{display:grid;grid-template-columns:1fr;gap:.5rem;margin-top:.6rem}
        @media(min-width:48rem){.decide{grid-template-columns:2fr 1fr}}
        label{display:block;font-size:.85rem;color:var(--muted);margin:.25rem 0}
        input,select,textarea{width:100%;font:inherit;padding:.4rem .5rem;border:1px solid var(--line);\
        border-radius:.4rem;background:#fff;color:var(--ink)}
        input[type=checkbox]{width:auto}
        textarea{min-height:3.2rem}
        button{font:inherit;padding:.45rem .9rem;border-radius:.4rem;border:1px solid var(--accent);\
        background:var(--accent);color:#fff;cursor:pointer}
        button.quiet{background:#fff;color:var(--accent)}
        button.danger{background:var(--warn);border-color:var(--warn)}
        header button{padding:.2rem .6rem;background:transparent;border-color:#5d6b80}
        table{width:100%;border-collapse:collapse;background:var(--card);font-size:.9rem}
        th,td{text-align:left;padding:.45rem .5rem;border-bottom:1px solid var(--line);vertical-align:top}
        th{background:#eef1f5;font-weight:600}
        .scroll{overflow-x:auto;border:1px solid var(--line);border-radius:.6rem}
        .st{font-weight:600;white-space:nowrap}
        .st-sent,.st-push,.st-scheduled{color:var(--ok)}
        .st-failed,.st-unknown,.st-rejected,.st-expired,.st-filtered{color:var(--warn)}
        .st-held,.st-pending,.st-review{color:var(--held)}
        .filters{display:flex;flex-wrap:wrap;gap:.5rem;align-items:end;margin-bottom:1rem}
        .filters label{margin:0}
        .grid{display:grid;grid-template-columns:1fr;gap:1rem}
        .chart{display:block;max-width:100%;height:auto}
        .chart .tick{font-size:11px;fill:var(--muted)}
        .legend{list-style:none;padding:0;margin:.4rem 0 0;font-size:.85rem}
        .legend svg{vertical-align:-2px}
        td.num{text-align:right;white-space:nowrap}
        @media(min-width:56rem){.grid{grid-template-columns:3fr 2fr}}
        .phone{background:#1b1f27;border-radius:1.6rem;padding:1.4rem .9rem 2rem;max-width:22rem;color:#fff}
        .phone .clock{text-align:center;font-size:2.4rem;font-weight:300;margin-bottom:1rem}
        .note{background:rgba(245,245,245,.93);color:#111;border-radius:.9rem;padding:.6rem .75rem}
        .note .app{display:flex;justify-content:space-between;font-size:.75rem;color:#555;margin-bottom:.2rem}
        .note .text{white-space:pre-wrap;overflow-wrap:anywhere}
        .empty{color:var(--muted)}
        .login{max-width:22rem;margin:3rem auto}
        .row{display:flex;gap:.5rem;flex-wrap:wrap}.row>*{flex:1 1 10rem}
        """

    /// The Content-Security-Policy source of the inline style.
    static let styleHash = "'sha256-" + Data(SHA256.hash(data: Data(style.utf8))).base64EncodedString() + "'"

    /// Every answer's policy: nothing from elsewhere, no inline script, forms only to the desk.
    static let contentSecurityPolicy =
        "default-src 'none'; script-src 'self'; style-src \(styleHash); img-src 'self'; connect-src 'self'; "
        + "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

    /// The page's script: reload when the ledger changes (not while the editor is typing), and
    /// ask before a push goes to every reader.
    static let script = """
        (function () {
          "use strict";
          var mark = null, typing = false;
          document.addEventListener("input", function () { typing = true; });
          function poll() {
            fetch("/api/changes", { credentials: "same-origin", cache: "no-store" })
              .then(function (r) { return r.ok ? r.json() : null; })
              .then(function (body) {
                if (!body) return;
                if (mark !== null && body.mark !== mark && !typing) { location.reload(); return; }
                mark = body.mark;
              })
              .catch(function () {});
          }
          if (document.body.dataset.live === "1") { poll(); setInterval(poll, 4000); }
          document.querySelectorAll("form[data-confirm]").forEach(function (form) {
            form.addEventListener("submit", function (event) {
              var button = event.submitter;
              if (button && button.value === "preview") return;
              if (!window.confirm(form.dataset.confirm)) event.preventDefault();
            });
          });
        })();
        """
}
