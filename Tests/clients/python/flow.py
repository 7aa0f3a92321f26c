"""The app's flow through the client openapi-python-client made from the served document (the
Android flow of docs/api.md, as plain HTTP calls through generated models): every field is set
through the generated models, so a field the document leaves out is a TypeError.

Usage: flow.py GENERATED_PARENT URL USER PASSWORD. Prints a JSON report."""
import base64
import json
import sys

sys.path.insert(0, sys.argv[1])
from newspush_client import AuthenticatedClient, Client  # noqa: E402
from newspush_client.api.default import (  # noqa: E402
    forget_me, notify_user, put_installation, put_registration, registration_id, secure_text)
from newspush_client.models import (  # noqa: E402
    DeviceRegistration, DeviceRegistrationPlatform, Installation, InstallationPlatform, Registered, SecureText, Sent)

url, user, password = sys.argv[2:5]
anonymous = Client(base_url=url, raise_on_unexpected_status=True)
reader = AuthenticatedClient(
    base_url=url, token=base64.b64encode(f"{user}:{password}".encode()).decode(), prefix="Basic",
    raise_on_unexpected_status=True)
token = "python:APA91b" + "Q-r_s.9" * 12
report = {}


def answer(response, kind):
    if response.status_code != 200 or not isinstance(response.parsed, kind):
        raise SystemExit(f"{response.status_code}: {response.content!r}")
    return response.parsed


# An anonymous Android phone with topics and a language.
registered = answer(put_installation.sync_detailed(
    "python-anonymous", client=anonymous,
    body=Installation(platform=InstallationPlatform.FCMV1, push_channel=token + "-a",
                      topics=["World", "Sports", "Gardening"], language="fr")), Registered)
report["anonymous"] = {"installationId": registered.installation_id, "tags": registered.tags,
                       "ignored": registered.ignored}

# A signed-in phone.
signed_in = answer(put_installation.sync_detailed(
    "python-signed-in", client=reader,
    body=Installation(platform=InstallationPlatform.APNS, push_channel="5b" * 32, topics=["Politics"],
                      language="en")), Registered)
report["signedIn"] = {"installationId": signed_in.installation_id, "tags": signed_in.tags}

# The tutorials' flow: ask for an id, then register under it.
asked = registration_id.sync_detailed(client=reader, handle=token + "-t")
if asked.status_code != 200 or not isinstance(asked.parsed, str):
    raise SystemExit(f"register: {asked.status_code} {asked.content!r}")
put = put_registration.sync_detailed(
    asked.parsed, client=reader,
    body=DeviceRegistration(platform=DeviceRegistrationPlatform.FCM, handle=token + "-t", tags=["Business"]))
if put.status_code != 200:
    raise SystemExit(f"register/{asked.parsed}: {put.status_code} {put.content!r}")
report["tutorial"] = {"id": asked.parsed}

# A secure push to the reader's own devices, and its text.
sent = answer(notify_user.sync_detailed(client=reader, body="Your parcel is at the door"), Sent)
text = answer(secure_text.sync_detailed(sent.secure_id, client=reader), SecureText)
report["secure"] = {"secureId": sent.secure_id, "payload": text.payload, "read": text.read}

# Forget-me.
forgotten = forget_me.sync_detailed(client=reader)
if forgotten.status_code != 204:
    raise SystemExit(f"forget: {forgotten.status_code} {forgotten.content!r}")
report["forgotten"] = True

print(json.dumps(report, sort_keys=True))
