"""The desk in a real browser: Debian's Chromium driven through WebDriver (selenium).

A newsroom of its own on 127.0.0.1: a feed server (this file), the hub emulator
(newspush-hub), a ledger in which `newspush run` held World stories for review, and
`newspush desk`. Each test does what an editor does and checks what the editor, the ledger
and the emulator's virtual phones see. Screenshots of every screen go to
$NEWSPUSH_SCREENSHOTS (default .build/desk-screenshots).

Run by scripts/test.sh after the Swift suites (it needs their debug build):
    /usr/bin/python3 -m unittest discover -s Tests/desk -v
A component that is missing (selenium, chromium, chromedriver, the binaries) makes every
test report as skipped with the reason.
"""

import email.utils
import http.client
import http.server
import stat
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.request

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BIN = os.environ.get("NEWSPUSH_BIN_DIR", os.path.join(ROOT, ".build", "debug"))
SHOTS = os.environ.get("NEWSPUSH_SCREENSHOTS", os.path.join(ROOT, ".build", "desk-screenshots"))
CONNECTION = (
    "Endpoint=sb://contoso-news.servicebus.windows.net/;SharedAccessKeyName=DefaultFullSharedAccessSignature;"
    "SharedAccessKey=AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="
)
HOSTILE = "<img src=x onerror=alert(1)> Markets fall on rate fears"
DEVICES = """hub: breaking-news
devices:
  - id: phone
    platform: apple
    tags: [World, Politics, Business]
    template: '{"aps":{"alert":"$(messageParam)"}}'
    headers: {apns-collapse-id: "$(collapseId)"}
"""

try:
    from selenium import webdriver
    from selenium.common.exceptions import NoAlertPresentException, WebDriverException
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.ui import WebDriverWait

    MISSING = None
except ImportError as error:  # reported as a skip, never a pass
    MISSING = f"selenium is not installed ({error}); scripts/setup.sh --tests installs python3-selenium"


def missing_component():
    if MISSING:
        return MISSING
    for path in ("/usr/bin/chromium", "/usr/bin/chromedriver"):
        if not os.access(path, os.X_OK):
            return f"{path} is missing; scripts/setup.sh --tests installs chromium and chromium-driver"
    for name in ("newspush", "newspush-hub"):
        if not os.access(os.path.join(BIN, name), os.X_OK):
            return f"{BIN}/{name} is not built (swift build first)"
    return None


def rss(items):
    now = time.time()
    body = "".join(
        f"<item><title>{title}</title><link>https://news.example.org/{guid}</link><guid>{guid}</guid>"
        f"<pubDate>{email.utils.formatdate(now - 120, usegmt=True)}</pubDate></item>"
        for guid, title in items
    )
    return f'<?xml version="1.0"?><rss version="2.0"><channel><title>World Desk</title>{body}</channel></rss>'


class Newsroom:
    """The feed server, the hub emulator, the ledger with held stories, and the desk."""

    def __init__(self):
        self.folder = tempfile.mkdtemp(prefix="newspush-desk-")
        self.processes = []
        self.env = dict(os.environ, NEWSPUSH_HUB_CONNECTION_STRING=CONNECTION, NO_COLOR="1")
        items = [
            ("storm", "Storm closes the harbour"),
            ("bridge", "Bridge reopens after repairs"),
            ("quake", "Earthquake shakes the capital"),
            ("dam", "Dam gates opened as river rises"),
            ("ferry", "Ferry service resumes"),
            ("tram", "Tram strike called off"),
            ("council", "Council budget passes"),
            # Double-escaped: after the feed's own entity decoding the title *is* this text.
            ("markets", HOSTILE.replace("<", "&amp;lt;").replace(">", "&amp;gt;")),
        ]
        feed = rss(items).encode()

        class Feeds(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                self.send_response(200)
                self.send_header("Content-Type", "application/rss+xml")
                self.send_header("Content-Length", str(len(feed)))
                self.end_headers()
                self.wfile.write(feed)

            def log_message(self, *args):
                pass

        self.feeds = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Feeds)
        threading.Thread(target=self.feeds.serve_forever, daemon=True).start()
        self.write("devices.yaml", DEVICES)
        hub = self.start([os.path.join(BIN, "newspush-hub"), "--port", "0", "--devices", self.path("devices.yaml"),
                          "--connection-string", CONNECTION])
        self.hub = self.listening(hub, "newspush-hub listening on ")
        self.write("feeds.yaml", f"""hub:
  name: breaking-news
  connection_string: ${{NEWSPUSH_HUB_CONNECTION_STRING}}
  endpoint: {self.hub}
policy: {{first_run: send, budget: {{per_category: 50, per: 1h}}}}
desk: {{trusted_proxies: [127.0.0.1]}}
review:
  rules:
    - {{category: World, mode: review}}
feeds:
  - {{url: "http://127.0.0.1:{self.feeds.server_address[1]}/world.xml", name: World Desk, category: World}}
""")
        self.config = self.path("feeds.yaml")
        self.newspush(["run", "--config", self.config])
        for name, role, password in (("alice", "editor", "alice-password"), ("bob", "editor", "bob-password"),
                                     ("vera", "viewer", "vera-password"), ("rita", "editor", "rita-password")):
            self.newspush(["desk", "add-user", name, "--role", role, "--config", self.config], stdin=password + "\n")
        desk = self.start([os.path.join(BIN, "newspush"), "desk", "--listen", "127.0.0.1:0", "--config", self.config],
                          log="desk.log")
        self.desk = self.listening(desk, "newspush desk listening on ").rstrip("/")

    def path(self, name):
        return os.path.join(self.folder, name)

    def write(self, name, text):
        with open(self.path(name), "w") as file:
            file.write(text)

    def start(self, arguments, log=None):
        stderr = open(self.path(log), "w") if log else subprocess.DEVNULL
        process = subprocess.Popen(arguments, stdout=subprocess.PIPE, stderr=stderr, env=self.env, text=True)
        self.processes.append(process)
        return process

    @staticmethod
    def listening(process, prefix):
        line = process.stdout.readline()
        if not line.startswith(prefix):
            raise RuntimeError(f"expected '{prefix}…', got {line!r}")
        return line[len(prefix):].split()[0]

    def newspush(self, arguments, stdin=None):
        result = subprocess.run([os.path.join(BIN, "newspush")] + arguments, input=stdin, capture_output=True,
                                text=True, env=self.env, timeout=120)
        if result.returncode != 0:
            raise RuntimeError(f"newspush {' '.join(arguments)} exited {result.returncode}: {result.stderr}")
        return result.stdout

    def deliveries(self):
        with urllib.request.urlopen(self.hub.rstrip("/") + "/_emulator/deliveries", timeout=10) as answer:
            return json.load(answer)

    def held(self):
        return json.loads(self.newspush(["review", "list", "--format", "json", "--config", self.config]))["held"]

    def held_id(self, title):
        """The id of the held push titled `title`; None once it is no longer held."""
        return next((h["id"] for h in self.held() if h["properties"].get("title") == title), None)

    def payloads(self, text):
        """The deliveries whose payload holds `text`."""
        return [d for d in self.deliveries() if text in d["payload"]]

    def stop(self):
        for process in self.processes:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
        self.feeds.shutdown()
        shutil.rmtree(self.folder, ignore_errors=True)


NEWSROOM = None


def setUpModule():
    global NEWSROOM
    reason = missing_component()
    if reason:
        raise unittest.SkipTest(reason)
    os.makedirs(SHOTS, exist_ok=True)
    NEWSROOM = Newsroom()


def tearDownModule():
    if NEWSROOM:
        NEWSROOM.stop()


def desk_request(method, path, body=None, headers=None):
    """One request to the desk, redirects not followed: (status, headers, body)."""
    host, port = NEWSROOM.desk.split("//")[1].split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=60)
    connection.request(method, path, body=body, headers=headers or {})
    answer = connection.getresponse()
    result = (answer.status, {k.lower(): v for k, v in answer.getheaders()}, answer.read().decode())
    connection.close()
    return result


def sign_in(user, password, extra=None):
    headers = {"Content-Type": "application/x-www-form-urlencoded", **(extra or {})}
    return desk_request("POST", "/login", f"user={user}&password={password}", headers)


class DeskHTTPContract(unittest.TestCase):
    """SPEC §8 as another program sees it."""

    def session(self, user="alice", password="alice-password"):
        status, headers, _ = sign_in(user, password)
        self.assertEqual(status, 303)
        cookie = headers["set-cookie"].split(";")[0]
        _, _, page = desk_request("GET", "/", headers={"Cookie": cookie})
        csrf = page.split('<meta name="csrf-token" content="')[1].split('"')[0]
        return {"Cookie": cookie, "X-CSRF-Token": csrf}

    def test_without_a_session_pages_redirect_and_the_api_answers_401(self):
        for path in ("/", "/next", "/sent", "/publish", "/delivery/x"):
            status, headers, body = desk_request("GET", path)
            self.assertEqual((status, headers.get("location")), (303, "/login"), path)
            self.assertNotIn("Storm", body)
        for method, path in (("GET", "/api/review"), ("GET", "/api/history"), ("GET", "/api/preview"),
                             ("POST", "/api/publish"), ("POST", "/api/review/x/approve")):
            status, _, body = desk_request(method, path)
            self.assertEqual(status, 401, path)
            self.assertNotIn("Storm", body)
        status, _, _ = desk_request("GET", "/api/review", headers={"Cookie": "newspush_desk=forged"})
        self.assertEqual(status, 401)

    def test_every_answer_carries_the_security_headers(self):
        signed = self.session()
        answers = [desk_request("GET", "/login"), desk_request("GET", "/"), desk_request("GET", "/api/review"), desk_request("GET", "/desk.js"),
                   desk_request("GET", "/", headers=signed), desk_request("GET", "/api/review", headers=signed),
                   desk_request("POST", "/api/publish", "{}", {"Cookie": signed["Cookie"]})]
        for status, headers, body in answers:
            policy = headers.get("content-security-policy", "")
            self.assertIn("script-src 'self'", policy)
            self.assertNotIn("unsafe-inline", policy)
            self.assertEqual(headers.get("x-content-type-options"), "nosniff")
            self.assertEqual(headers.get("referrer-policy"), "same-origin")
        self.assertNotIn("<script>", answers[4][2], "no inline script on a page")
        self.assertIn('<meta name="csrf-token" content="', answers[4][2])

    def test_the_session_cookie_is_httponly_strict_and_secure_behind_tls(self):
        status, headers, _ = sign_in("alice", "alice-password")
        cookie = headers["set-cookie"]
        self.assertEqual(status, 303)
        self.assertEqual(headers["location"], "/")
        self.assertIn("HttpOnly", cookie)
        self.assertIn("SameSite=Strict", cookie)
        self.assertNotIn("Secure", cookie)
        _, headers, _ = sign_in("alice", "alice-password", {"X-Forwarded-Proto": "https"})
        self.assertIn("Secure", headers["set-cookie"])
        status, headers, _ = sign_in("alice", "wrong")
        self.assertEqual(status, 401)
        self.assertNotIn("set-cookie", headers)
        status, headers, _ = sign_in("nobody", "alice-password")
        self.assertEqual(status, 401)
        self.assertNotIn("set-cookie", headers)
        signed = self.session()
        status, headers, _ = desk_request("POST", "/logout", "", signed)
        self.assertEqual((status, headers["location"]), (303, "/login"))
        self.assertEqual(desk_request("GET", "/api/review", headers=signed)[0], 401)

    def test_sign_in_attempts_are_limited_per_user(self):
        for _ in range(5):
            self.assertEqual(sign_in("rita", "guess")[0], 401)
        status, headers, body = sign_in("rita", "rita-password")
        self.assertEqual(status, 429)
        self.assertNotIn("set-cookie", headers)
        self.assertGreater(int(headers["retry-after"]), 0)
        self.assertEqual(sign_in("bob", "bob-password")[0], 303, "other users are not locked out")

    def test_a_failed_sign_in_is_logged_without_what_was_typed(self):
        self.assertEqual(sign_in("correct-horse-battery", "x")[0], 401)
        self.assertEqual(sign_in("bob", "bobs-wrong-guess")[0], 401)
        time.sleep(0.5)
        with open(NEWSROOM.path("desk.log")) as file:
            log = file.read()
        self.assertIn("failed sign-in for an unknown user", log)
        self.assertIn("failed sign-in for user 'bob'", log)
        self.assertNotIn("correct-horse-battery", log)
        self.assertNotIn("bobs-wrong-guess", log)

    def test_add_user_stores_a_bcrypt_hash_in_a_file_only_its_owner_reads(self):
        path = NEWSROOM.path("desk-users.yaml")
        self.assertEqual(stat.S_IMODE(os.stat(path).st_mode), 0o600)
        with open(path) as file:
            text = file.read()
        self.assertEqual(text.count("$2b$"), 4)
        for password in ("alice-password", "bob-password", "vera-password", "rita-password"):
            self.assertNotIn(password, text)

    def test_posts_need_the_csrf_token_and_an_editor(self):
        signed = self.session()
        forged = {"Cookie": signed["Cookie"], "X-CSRF-Token": "forged", "Content-Type": "application/json"}
        body = json.dumps({"category": "World", "title": "Forged request"})
        self.assertEqual(desk_request("POST", "/api/publish", body, forged)[0], 403)
        self.assertEqual(desk_request("POST", "/api/publish", body, {"Cookie": signed["Cookie"]})[0], 403)
        viewer = self.session("vera", "vera-password")
        self.assertEqual(desk_request("POST", "/api/publish", body, viewer)[0], 403)
        self.assertEqual(desk_request("POST", "/logout", "", viewer)[0], 303, "a viewer may sign out")
        self.assertEqual(NEWSROOM.payloads("Forged"), [])

    def test_an_approval_while_a_run_holds_the_lock_says_so_and_changes_nothing(self):
        signed = self.session()
        council = NEWSROOM.held_id("Council budget passes")
        fault = json.dumps({"delay_seconds": 25, "count": 1}).encode()
        urllib.request.urlopen(urllib.request.Request(NEWSROOM.hub.rstrip("/") + "/_emulator/faults", data=fault,
                                                      headers={"Content-Type": "application/json"}), timeout=10)
        publish = subprocess.Popen(
            [os.path.join(BIN, "newspush"), "publish", "--yes", "--category", "Sports", "--title",
             "Cup final goes to extra time", "--config", NEWSROOM.config],
            env=NEWSROOM.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            time.sleep(3)
            self.assertIsNone(publish.poll(), "the publish should still be sending")
            answers = []
            waiting = [threading.Thread(target=lambda: answers.append(
                desk_request("POST", f"/api/review/{council}/approve", "", signed))) for _ in range(3)]
            for thread in waiting:
                thread.start()
            time.sleep(1)
            # The pages do not wait behind approvals waiting for the lock.
            started = time.monotonic()
            self.assertEqual(desk_request("GET", "/api/review", headers=signed)[0], 200)
            self.assertLess(time.monotonic() - started, 5)
            for thread in waiting:
                thread.join()
            self.assertEqual(len(answers), 3)
            status, _, body = answers[0]
            self.assertTrue(all(answer[0] == 503 for answer in answers), [a[0] for a in answers])
            self.assertIn("a run is sending", json.loads(body)["error"])
            self.assertIsNotNone(NEWSROOM.held_id("Council budget passes"))
        finally:
            publish.wait(timeout=120)
        status, _, body = desk_request("POST", f"/api/review/{council}/approve", "", signed)
        self.assertEqual(status, 200, body)
        self.assertEqual(len(NEWSROOM.payloads("Council budget")), 1)

    def test_the_api_answers_as_the_cli_and_a_second_approval_is_a_conflict(self):
        signed = self.session()
        status, _, body = desk_request("GET", "/api/review", headers=signed)
        self.assertEqual(status, 200)
        cli = NEWSROOM.held()
        self.assertEqual([h["id"] for h in json.loads(body)["held"]], [h["id"] for h in cli])
        self.assertEqual(set(json.loads(body)["held"][0]), set(cli[0]))
        ferry = NEWSROOM.held_id("Ferry service resumes")
        status, _, body = desk_request("POST", f"/api/review/{ferry}/approve", "", signed)
        self.assertEqual(status, 200, body)
        self.assertEqual(json.loads(body)["push"], "sent")
        bob = self.session("bob", "bob-password")
        status, _, body = desk_request("POST", f"/api/review/{ferry}/approve", "", bob)
        self.assertEqual(status, 409, body)
        self.assertIn("already approved by alice", json.loads(body)["error"])
        self.assertEqual(len(NEWSROOM.payloads("Ferry service")), 1)
        status, _, body = desk_request("GET", "/api/history", headers=signed)
        self.assertEqual(status, 200)
        history = json.loads(body)
        self.assertTrue(any(p["id"] == ferry and p["status"] == "sent" for p in history["pushes"]))
        self.assertTrue(any(r["entry_id"] == ferry and r["editor"] == "alice" for r in history["history"]))
        status, _, body = desk_request("GET", "/api/preview", headers=signed)
        self.assertEqual(status, 200)
        self.assertTrue(json.loads(body)["dry_run"])


class DeskInABrowser(unittest.TestCase):
    def setUp(self):
        self.browsers = []

    def tearDown(self):
        for browser in self.browsers:
            browser.quit()

    # MARK: helpers

    def browser(self, width=1280, height=1000):
        options = webdriver.ChromeOptions()
        options.binary_location = "/usr/bin/chromium"
        for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                         f"--window-size={width},{height}"):
            options.add_argument(argument)
        browser = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
        browser.set_page_load_timeout(60)
        self.browsers.append(browser)
        return browser

    def sign_in(self, browser, user, password):
        browser.get(NEWSROOM.desk + "/")
        self.assertTrue(browser.current_url.endswith("/login"), browser.current_url)
        browser.find_element(By.ID, "user").send_keys(user)
        browser.find_element(By.ID, "password").send_keys(password)
        browser.find_element(By.CSS_SELECTOR, "form[action='/login'] button").click()
        WebDriverWait(browser, 10).until(lambda b: not b.current_url.endswith("/login"))

    def card(self, browser, title):
        cards = browser.find_elements(By.CSS_SELECTOR, "article.card")
        for card in cards:
            if card.find_element(By.TAG_NAME, "h2").text == title:
                return card
        titles = [card.find_element(By.TAG_NAME, "h2").text for card in cards]
        self.fail(f"no held card titled {title!r} on {browser.current_url}: {titles}")

    def press(self, browser, button, confirm=True):
        """Presses a form's button (accepting the page's "send to every reader?" question) and
        returns the message of the page the form leads to."""
        # A mark on the old document: the new page has none. (Chromium's driver may report a
        # replaced element as an inspector error rather than as stale, so elements are not used.)
        browser.execute_script("window.__newspushOldPage = true")
        button.click()
        if confirm:
            WebDriverWait(browser, 10).until(expected_conditions.alert_is_present())
            browser.switch_to.alert.accept()
        WebDriverWait(browser, 60, ignored_exceptions=(WebDriverException,)).until(
            lambda b: b.execute_script("return window.__newspushOldPage === undefined"))
        return self.flash(browser)

    def flash(self, browser):
        return WebDriverWait(browser, 30).until(lambda b: b.find_element(By.CSS_SELECTOR, "p.flash")).text

    def fetch(self, browser, path, body=None, csrf=True):
        """A POST from the page's own script context, as the desk's JavaScript would send it."""
        return browser.execute_async_script(
            """
            const [path, body, csrf, done] = arguments;
            const headers = {"Content-Type": "application/json"};
            if (csrf) headers["X-CSRF-Token"] = document.querySelector('meta[name="csrf-token"]').content;
            fetch(path, {method: "POST", headers, body: JSON.stringify(body || {})})
              .then(r => r.text().then(t => done([r.status, t])));
            """, path, body, csrf)

    @staticmethod
    def retype(field, text):
        field.clear()
        field.send_keys(text)

    @staticmethod
    def sent_row(browser, text):
        """The Sent page's row whose text holds `text`."""
        browser.get(NEWSROOM.desk + "/sent")
        return next(r for r in browser.find_elements(By.CSS_SELECTOR, "tbody tr") if text in r.text)

    def shot(self, browser, name):
        browser.save_screenshot(os.path.join(SHOTS, name + ".png"))

    # MARK: tests

    def test_sign_in_is_required_and_a_wrong_password_is_refused(self):
        browser = self.browser()
        browser.get(NEWSROOM.desk + "/sent")
        self.assertTrue(browser.current_url.endswith("/login"))
        self.assertNotIn("Storm", browser.page_source)
        self.shot(browser, "login")
        browser.find_element(By.ID, "user").send_keys("alice")
        browser.find_element(By.ID, "password").send_keys("not-her-password")
        message = self.press(browser, browser.find_element(By.CSS_SELECTOR, "form[action='/login'] button"),
                             confirm=False)
        self.assertIn("Wrong user or password", message)
        self.assertEqual(browser.get_cookies(), [])
        browser.get(NEWSROOM.desk + "/")
        self.assertTrue(browser.current_url.endswith("/login"))

    def test_a_viewer_can_look_but_not_approve_or_publish(self):
        browser = self.browser()
        self.sign_in(browser, "vera", "vera-password")
        self.assertIn("Bridge reopens after repairs", browser.page_source)
        self.assertEqual(browser.find_elements(By.CSS_SELECTOR, "form[action$='/approve']"), [])
        held = NEWSROOM.held_id("Bridge reopens after repairs")
        status, _ = self.fetch(browser, f"/api/review/{held}/approve")
        self.assertEqual(status, 403)
        status, _ = self.fetch(browser, "/api/publish", {"category": "World", "title": "Viewer tries to publish"})
        self.assertEqual(status, 403)
        browser.get(NEWSROOM.desk + "/publish")
        self.assertIn("Viewers cannot publish", browser.page_source)
        self.assertIsNotNone(NEWSROOM.held_id("Bridge reopens after repairs"))
        self.assertEqual(NEWSROOM.payloads("Viewer tries"), [])

    def test_approving_with_an_edit_sends_exactly_one_push_with_the_edited_text(self):
        browser = self.browser()
        self.sign_in(browser, "alice", "alice-password")
        self.shot(browser, "waiting")
        card = self.card(browser, "Storm closes the harbour")
        self.retype(card.find_element(By.CSS_SELECTOR, "input[name='title']"), "Storm closes the harbour; ferries cancelled")
        message = self.press(browser, card.find_element(By.CSS_SELECTOR, "button[name='approve']"))
        self.assertTrue(message.startswith("approved and sent"), message)
        sent = NEWSROOM.payloads("Storm closes the harbour")
        self.assertEqual(len(sent), 1, sent)
        self.assertIn("ferries cancelled", sent[0]["payload"])
        self.assertIsNone(NEWSROOM.held_id("Storm closes the harbour"))
        history = json.loads(NEWSROOM.newspush(["review", "history", "--format", "json", "--config",
                                                NEWSROOM.config]))["history"]
        self.assertTrue(any(r["action"] == "edited" and r["editor"] == "alice" for r in history), history)

    def test_publishing_a_repeat_is_refused_and_sent_with_force(self):
        browser = self.browser()
        self.sign_in(browser, "alice", "alice-password")
        browser.get(NEWSROOM.desk + "/publish")

        def fill(title, force=False):
            browser.find_element(By.CSS_SELECTOR, "select[name='category']").send_keys("Business")
            for name, value in (("title", title), ("url", "https://news.example.org/rates")):
                self.retype(browser.find_element(By.NAME, name), value)
            box = browser.find_element(By.NAME, "force")
            if box.is_selected() != force:
                box.click()

        fill("Central bank raises rates")
        self.assertIn("preview", self.press(browser, browser.find_element(By.CSS_SELECTOR, "button[value='preview']"),
                                            confirm=False))
        self.assertIn("Central bank raises rates", browser.find_element(By.ID, "phone-alert").text)
        self.assertEqual(NEWSROOM.payloads("Central bank raises rates"), [], "a preview sends nothing")
        self.shot(browser, "publish")
        message = self.press(browser, browser.find_element(By.CSS_SELECTOR, "button[value='send']"))
        self.assertTrue(message.startswith("sent"), message)
        self.assertEqual(len(NEWSROOM.payloads("Central bank raises rates")), 1)

        browser.get(NEWSROOM.desk + "/publish")
        fill("Central bank raises rates again")
        message = self.press(browser, browser.find_element(By.CSS_SELECTOR, "button[value='send']"))
        self.assertTrue(message.startswith("not sent"), message)
        self.assertEqual(NEWSROOM.payloads("raises rates again"), [])

        fill("Central bank raises rates again", force=True)
        message = self.press(browser, browser.find_element(By.CSS_SELECTOR, "button[value='send']"))
        self.assertTrue(message.startswith("sent"), message)
        self.assertEqual(len(NEWSROOM.payloads("raises rates again")), 1)

    def test_a_correction_replaces_the_alert_with_the_same_collapse_id(self):
        browser = self.browser()
        self.sign_in(browser, "alice", "alice-password")
        status, text = self.fetch(browser, "/api/publish", {
            "category": "Politics", "title": "Minister resigns", "url": "https://news.example.org/minister"})
        self.assertEqual(status, 200, text)
        first = NEWSROOM.payloads("Minister resigns")
        self.assertEqual(len(first), 1)
        row = self.sent_row(browser, "Minister resigns")
        self.shot(browser, "sent")
        row.find_element(By.LINK_TEXT, "correct").click()
        self.retype(browser.find_element(By.NAME, "title"), "Minister resigns after vote of no confidence")
        message = self.press(browser, browser.find_element(By.CSS_SELECTOR, "button[value='send']"))
        self.assertTrue(message.startswith("sent"), message)
        corrected = NEWSROOM.payloads("after vote of no confidence")
        self.assertEqual(len(corrected), 1)
        row = self.sent_row(browser, "no confidence")
        self.assertIn("correction", row.text)
        row.find_element(By.LINK_TEXT, "delivery").click()
        telemetry = WebDriverWait(browser, 30).until(lambda b: b.find_element(By.TAG_NAME, "pre")).text
        self.assertIn(corrected[0]["notification_id"], telemetry)
        self.assertIn("state ", telemetry)
        self.assertIsNotNone(first[0].get("collapse_id"), first)
        self.assertEqual(corrected[0].get("collapse_id"), first[0].get("collapse_id"))

    def test_a_hostile_headline_is_shown_as_text_and_runs_no_script(self):
        browser = self.browser()
        self.sign_in(browser, "alice", "alice-password")
        # The alert text is cleaned of markup before it is held; the headline as the feed gave
        # it reaches the next-run table, where it must be text.
        card = self.card(browser, "Markets fall on rate fears")
        self.assertEqual(card.find_elements(By.TAG_NAME, "img"), [])
        browser.get(NEWSROOM.desk + "/next")
        self.shot(browser, "next-run")
        table = browser.find_element(By.TAG_NAME, "table")
        self.assertIn(HOSTILE, table.text)
        self.assertEqual(browser.find_elements(By.CSS_SELECTOR, "main img"), [])
        self.assertIn("&lt;img src=x onerror=alert(1)&gt;", browser.page_source)
        with self.assertRaises(NoAlertPresentException):
            browser.switch_to.alert.text
        # An editor's own text is shown as text too: in the phone preview of the publish form.
        browser.get(NEWSROOM.desk + "/publish")
        browser.find_element(By.CSS_SELECTOR, "select[name='category']").send_keys("Sports")
        browser.find_element(By.NAME, "message").send_keys("<script>alert(2)</script><b>Cup final</b>")
        self.press(browser, browser.find_element(By.CSS_SELECTOR, "button[value='preview']"), confirm=False)
        phone = browser.find_element(By.ID, "phone-alert")
        self.assertEqual(phone.find_elements(By.CSS_SELECTOR, "b, script"), [])
        with self.assertRaises(NoAlertPresentException):
            browser.switch_to.alert.text

    def test_a_form_without_the_csrf_token_is_refused(self):
        browser = self.browser()
        self.sign_in(browser, "alice", "alice-password")
        card = self.card(browser, "Dam gates opened as river rises")
        browser.execute_script(
            "arguments[0].querySelectorAll('input[name=csrf]').forEach(e => e.remove())", card)
        card.find_element(By.NAME, "reason").send_keys("not verified")
        message = self.press(browser, card.find_element(By.CSS_SELECTOR, "button.danger"), confirm=False)
        self.assertIn("CSRF", message)
        self.assertIn("Not allowed", browser.page_source)
        self.assertIsNotNone(NEWSROOM.held_id("Dam gates opened as river rises"))
        status, _ = self.fetch(browser, f"/api/review/{NEWSROOM.held_id('Dam gates opened as river rises')}/reject",
                               {"reason": "no token"}, csrf=False)
        self.assertEqual(status, 403)
        self.assertIsNotNone(NEWSROOM.held_id("Dam gates opened as river rises"))

    def test_the_page_reloads_itself_when_the_ledger_changes(self):
        browser = self.browser()
        self.sign_in(browser, "alice", "alice-password")
        self.card(browser, "Tram strike called off")
        NEWSROOM.newspush(["review", "reject", NEWSROOM.held_id("Tram strike called off"), "--reason", "denied",
                           "--editor", "night-desk", "--config", NEWSROOM.config])
        WebDriverWait(browser, 20).until(lambda b: "Tram strike called off" not in b.page_source)

    def test_two_editors_approving_the_same_item_send_one_push(self):
        first, second = self.browser(), self.browser()
        self.sign_in(first, "alice", "alice-password")
        self.sign_in(second, "bob", "bob-password")
        buttons = [self.card(b, "Earthquake shakes the capital").find_element(By.CSS_SELECTOR, "button[name='approve']")
                   for b in (first, second)]
        answers = sorted(self.press(b, button) for b, button in zip((first, second), buttons))
        self.assertTrue(answers[0].startswith("approved and sent"), answers)
        self.assertIn("already approved by alice", answers[1])
        self.assertEqual(len(NEWSROOM.payloads("Earthquake shakes the capital")), 1)


if __name__ == "__main__":
    unittest.main(verbosity=2)


def api_request(base, method, path, body=None):
    """One JSON request to `newspush api` at `base`: (status, body)."""
    host, port = base.split("//")[1].rstrip("/").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=60)
    headers = {"Content-Type": "application/json"} if body is not None else {}
    connection.request(method, path, body=body, headers=headers)
    answer = connection.getresponse()
    result = (answer.status, answer.read().decode())
    connection.close()
    return result


class ReportsInABrowser(unittest.TestCase):
    """SPEC §11: the Reports page at a phone's width, its pictures drawn (checked in a screenshot)."""

    setUp = DeskInABrowser.setUp
    tearDown = DeskInABrowser.tearDown
    browser = DeskInABrowser.browser
    sign_in = DeskInABrowser.sign_in

    LINE = (0x00, 0x72, 0xB2)  # the first alert's line in the opens picture
    CELL = (0x0B, 0x57, 0xD0)  # the open-rate grid's shade

    def alerts_with_opens(self):
        """Four Business phones registered through `newspush api`, two Business alerts published,
        and the phones' apps reporting: alert 1 opened by 3, alert 2 by 1. Returns the titles."""
        api_process = NEWSROOM.start([os.path.join(BIN, "newspush"), "api", "--listen", "127.0.0.1:0", "--config",
                                      NEWSROOM.config], log="api.log")
        api = NEWSROOM.listening(api_process, "newspush api listening on ")
        for n in range(1, 5):
            token = f"{n:02x}" * 32
            status, body = api_request(api, "PUT", f"/api/installations/report-{n}",
                                       json.dumps({"platform": "apns", "pushChannel": token, "topics": ["Business"]}))
            self.assertEqual(status, 200, body)
        titles = ["Chipmaker shares soar on earnings", "Central bank holds rates"]
        for title in titles:
            NEWSROOM.newspush(["publish", "--config", NEWSROOM.config, "--category", "Business", "--title", title,
                               "--yes"])
        for title, opened in zip(titles, (3, 1)):
            delivered = [d for d in NEWSROOM.payloads(title) if d["device"].startswith("report-")]
            self.assertEqual(len(delivered), 4, delivered)
            for index, delivery in enumerate(sorted(delivered, key=lambda d: d["device"])):
                alert = json.loads(delivery["payload"])["alertId"]
                phone = delivery["device"].split("/")[0]
                event = "opened" if index < opened else "received"
                status, body = api_request(api, "POST", f"/api/alerts/{alert}/events",
                                           json.dumps({"installationId": phone, "event": event}))
                self.assertEqual(status, 204, body)
        return titles

    @staticmethod
    def pixels_near(image, box, colour, tolerance=40):
        """How many pixels inside `box` (left, top, right, bottom) are within `tolerance` of `colour`."""
        left, top, right, bottom = (int(v) for v in box)
        count = 0
        for x in range(max(left, 0), min(right, image.width)):
            for y in range(max(top, 0), min(bottom, image.height)):
                r, g, b = image.getpixel((x, y))[:3]
                if abs(r - colour[0]) + abs(g - colour[1]) + abs(b - colour[2]) <= tolerance:
                    count += 1
        return count

    def test_the_reports_page_draws_what_each_alert_did_at_phone_width(self):
        try:
            from PIL import Image
        except ImportError as error:
            self.skipTest(f"Pillow is missing ({error}); scripts/setup.sh --tests installs python3-pil")
        titles = self.alerts_with_opens()
        browser = self.browser(width=600, height=2400)
        # A phone's screen: Chromium's window is at least 500 pixels wide, its emulation is not.
        browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                                {"width": 390, "height": 2400, "deviceScaleFactor": 1, "mobile": True})
        self.sign_in(browser, "vera", "vera-password")  # a viewer: every role sees the reports
        browser.get(NEWSROOM.desk + "/reports")
        self.assertEqual(browser.execute_script("return window.innerWidth"), 390)
        page = browser.find_element(By.TAG_NAME, "main").text
        for title in titles:
            self.assertIn(title, page)
        rows = {row.find_elements(By.TAG_NAME, "td")[2].text.split("\n")[0]: row
                for row in browser.find_elements(By.CSS_SELECTOR, "table tbody tr")}
        first = [cell.text for cell in rows[titles[0]].find_elements(By.TAG_NAME, "td")]
        self.assertEqual(first[3:8], ["4", "–", "4", "3", "75.0 %"], first)
        # Readable at phone width: nothing wider than the screen but the table's own scroller.
        width = browser.execute_script("return document.documentElement.scrollWidth")
        self.assertLessEqual(width, 390, "the page scrolls sideways")
        lines = browser.find_elements(By.CSS_SELECTOR, "svg polyline.opens")
        self.assertEqual(len(lines), 2)
        self.assertGreaterEqual(len(browser.find_elements(By.CSS_SELECTOR, "svg rect.rate")), 1)
        # One point per alert of the 30 days (the other tests of this newsroom sent some too).
        self.assertGreaterEqual(len(browser.find_elements(By.CSS_SELECTOR, "svg circle.latency")), 2)
        charts = browser.find_elements(By.CSS_SELECTOR, "svg.chart")
        self.assertEqual(len(charts), 3)
        for chart in charts:
            self.assertGreater(chart.rect["width"], 300)
            self.assertLessEqual(chart.rect["x"] + chart.rect["width"], 390)
        # The marks are drawn, not only written: the screenshot has the line's colour inside the
        # first picture and the grid's shade inside the second.
        path = os.path.join(SHOTS, "reports-phone.png")
        browser.save_screenshot(path)
        image = Image.open(path).convert("RGB")
        ratio = browser.execute_script("return window.devicePixelRatio") or 1
        scroll = browser.execute_script("return window.scrollY")

        def box(element):
            r = element.rect
            return (r["x"] * ratio, (r["y"] - scroll) * ratio, (r["x"] + r["width"]) * ratio,
                    (r["y"] - scroll + r["height"]) * ratio)

        self.assertGreater(self.pixels_near(image, box(charts[0]), self.LINE), 100, "the opens line is not drawn")
        self.assertGreater(self.pixels_near(image, box(charts[1]), self.CELL, tolerance=60), 50,
                           "the open-rate grid is not drawn")
        self.assertGreater(self.pixels_near(image, box(charts[2]), (0xD5, 0x5E, 0x00)), 20,
                           "the latency points are not drawn")
