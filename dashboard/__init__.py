"""The mcviz dashboard's service modules (run from the repository; not part of the library).

``state`` (session keys, the column mapping), ``links`` (the shareable-link codec), ``runs``
(subpopulation runs shared by the pages, scopes of the review view) and ``review`` (the review
grid's figures) are plain Python, unit-tested without Streamlit; ``ui`` is the one thin
Streamlit plumbing module.
"""
