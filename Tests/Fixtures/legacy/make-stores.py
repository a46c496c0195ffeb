#!/usr/bin/env python3
"""Writes the old shared-defaults stores that docs/MIGRATING.md and the import-legacy tests use.

store.xml (XML property list), store.bplist (binary, as UserDefaults writes it) and store.json (the same shape as
JSON). pending_user_attributes holds Data items encoded the way Swift's PropertyListEncoder encodes an enum with an
associated value (a binary property list of {"email": {"_0": "ann@example.com"}}). Run it from this directory.
"""
import base64
import datetime
import json
import plistlib


def encoded(case, value):
    """A UserAttribute enum value as PropertyListEncoder (outputFormat .binary, the default) writes it."""
    return plistlib.dumps({case: {"_0": value}}, fmt=plistlib.FMT_BINARY)


user_attributes = [
    encoded("email", "ann@example.com"),
    encoded("firstName", "Ann"),
    encoded("gender", "female"),
    encoded("dateOfBirth", datetime.datetime(1990, 5, 1, 0, 0, 0)),
    encoded("country", "DE"),
    encoded("emailSubscriptionState", {"optedIn": {}}),
]

store = {
    "pending_custom_events": [
        {"event_name": "song_liked", "song": "Yesterday", "rating": 5},
        {"event_name": "app_opened"},
        # Breaks Braze's rules: a property name may not start with $. Imported as a dead letter.
        {"event_name": "checkout", "$total": 12.5},
    ],
    "pending_custom_attributes": [
        {"favorite_color": "blue"},
        {"plays": 12, "premium": True},
    ],
    "pending_user_attributes": user_attributes,
    # App settings: not analytics, skipped.
    "home_screen_type": "grid",
    "override_endpoint": "https://sdk.example.com",
}

with open("store.xml", "wb") as f:
    plistlib.dump(store, f, fmt=plistlib.FMT_XML)
with open("store.bplist", "wb") as f:
    plistlib.dump(store, f, fmt=plistlib.FMT_BINARY)

as_json = dict(store)
# In JSON a Data item is its base64 text; the decoded form is read too (the last item).
as_json["pending_user_attributes"] = [base64.b64encode(item).decode() for item in user_attributes[:-1]]
as_json["pending_user_attributes"].append({"emailSubscriptionState": {"_0": {"optedIn": {}}}})
with open("store.json", "w") as f:
    json.dump(as_json, f, indent=2)
    f.write("\n")
