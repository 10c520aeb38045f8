SELECT $tag$ ; DROP $tag$ AS s, 'it''s' AS q -- ; DELETE
FROM sales /* ; ATTACH */