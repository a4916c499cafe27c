"""Registry serializers derive their fields from the model once per class, and each serializer still gets
fields of its own, without the UniqueValidator the database's named constraint stands in for."""

from __future__ import annotations

from rest_framework.validators import UniqueValidator

from api import serializers as s


def test_each_serializer_gets_fields_of_its_own_and_each_class_its_own_fields():
    first, second = s.SiteSerializer(), s.SiteSerializer()
    assert first.fields["name"] is not second.fields["name"]
    first.fields["name"].read_only = True  # what a view may do to one serializer's fields
    assert second.fields["name"].read_only is False
    assert s.SiteSerializer().fields["name"].read_only is False
    assert list(s.ZoneSerializer().fields) == ["id", "zone_id", "description"]  # not the sites'
    assert "secret_ref" in s.RouterSerializer().fields and s.RouterSerializer().fields["secret_ref"].write_only


def test_the_derived_fields_leave_uniqueness_to_the_database_every_time():
    for _ in range(2):
        for serializer in (s.SiteSerializer(), s.PrincipalSerializer(), s.DeviceSerializer()):
            for name, field in serializer.fields.items():
                assert not any(isinstance(v, UniqueValidator) for v in field.validators), (serializer, name)
